package cluster

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// fatPod is a pod as the API server returns it, with much that EDL never reads.
func fatPod(muts ...builders.PodOption) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	prio := int32(100)
	p := builders.Pod("fat", append([]builders.PodOption{builders.OnNode("n1"), builders.Requests("1", "1Gi"), builders.Limits("2", "2Gi"), builders.Overhead("10m", "")}, muts...)...)
	p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...huge...}"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	if p.OwnerReferences == nil {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}}
	}
	p.Spec.Priority = &prio
	p.Spec.PriorityClassName = "high"
	p.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "k"}}
	p.Spec.Containers[0].Image = "paddle:latest"
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PADDLE_JOB_NAME", Value: "job"}}
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
	p.Spec.InitContainers = []corev1.Container{{Name: "sidecar", Image: "etcd", RestartPolicy: &always,
		Command: []string{"etcd"}, Resources: corev1.ResourceRequirements{Requests: builders.CPUMemory("100m", "")}}}
	p.Status.HostIP = "10.0.0.1"
	p.Status.NominatedNodeName = "n2"
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Message: "long message"},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 3,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
	return p
}

func TestTransformPodKeepsOnlyWhatIsRead(t *testing.T) {
	in := fatPod(builders.Label("app", "web"))
	want := &Pod{
		Name: "fat", Namespace: "ns", UID: "uid-fat", ResourceVersion: "1", CreationTimestamp: in.CreationTimestamp,
		NodeName: "n1", Priority: 100, PriorityClassName: "high",
		Resources: &PodResources{
			Containers:     []ContainerResources{{Requests: builders.CPUMemory("1", "1Gi"), Limits: builders.CPUMemory("2", "2Gi")}},
			InitContainers: []ContainerResources{{Requests: builders.CPUMemory("100m", ""), Sidecar: true}},
			Overhead:       in.Spec.Overhead,
		},
		Phase:             corev1.PodRunning,
		NominatedNodeName: "n2",
	}
	got, err := TransformPod(in)
	require.NoError(t, err)
	assert.Equal(t, want, got, "another pod keeps no labels, owners, annotations, Ready condition or container statuses")

	again, err := TransformPod(got)
	require.NoError(t, err)
	assert.Same(t, got, again, "the transform must be idempotent")

	meta, err := apimeta.Accessor(got)
	require.NoError(t, err, "client-go's stores read a cached pod's metadata")
	key, err := cache.MetaNamespaceKeyFunc(got)
	require.NoError(t, err)
	assert.Equal(t, "ns/fat", key)
	assert.Equal(t, "1", meta.GetResourceVersion())
}

// TestTransformPodKeepsWhereAnUnboundPodMayRun: while a pod waits for a node
// it keeps its placement, preemption policy and scheduling gates; bound, it
// drops them.
func TestTransformPodKeepsWhereAnUnboundPodMayRun(t *testing.T) {
	never := corev1.PreemptNever
	in := fatPod(builders.NodeSelector(map[string]string{"pool": "cpu"}))
	builders.Unbound()(in)
	builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu.")(in)
	in.Spec.PreemptionPolicy = &never
	in.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "other"}, {Name: v1.SchedulingGateAdmission}}
	got, err := TransformPod(in)
	require.NoError(t, err)
	pod := got.(*Pod)
	require.NotNil(t, pod.Scheduling)
	assert.Equal(t, snapshot.PlacementOf(&in.Spec), pod.Scheduling.Placement)
	assert.True(t, pod.Scheduling.PreemptNever)
	assert.Equal(t, []string{"other", v1.SchedulingGateAdmission}, pod.Scheduling.Gates)
	assert.True(t, pod.Unschedulable())

	in.Spec.NodeName = "n1"
	got, err = TransformPod(in)
	require.NoError(t, err)
	assert.Nil(t, got.(*Pod).Scheduling, "a bound pod keeps nothing of where it may run")
}

// TestTransformPodKeepsWhatTheControllerReadsOfJobPods: of a job's pods'
// status the controller reads the phase, a Ready condition that is True,
// a PodScheduled condition that is not (the reason and message of an
// unschedulable pod), and of each container that stopped or restarted its
// restarts, its exit codes, and the reason it waits to start again; nothing
// else is kept.
func TestTransformPodKeepsWhatTheControllerReadsOfJobPods(t *testing.T) {
	for _, label := range []string{v1.LabelTrainer, v1.LabelPserver, v1.LabelMaster} {
		t.Run(label, func(t *testing.T) {
			in := fatPod(builders.Label(label, "job"))
			in.Annotations[v1.AnnotationDeletionCost] = "999"
			in.Status.Conditions = append(in.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
			in.Status.Conditions[1].Status, in.Status.Conditions[1].Reason = corev1.ConditionFalse, "Unschedulable"
			in.Status.ContainerStatuses[0].Image = "paddle:latest"
			in.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m"}
			in.Status.ContainerStatuses = append(in.Status.ContainerStatuses,
				corev1.ContainerStatus{Name: "exited", Image: "paddle:latest",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "long"}}},
				corev1.ContainerStatus{Name: "runs", Image: "paddle:latest", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
			got, err := TransformPod(in)
			require.NoError(t, err)
			pod := got.(*Pod)
			assert.True(t, pod.Ready)
			assert.Equal(t, &Condition{Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "long message"}, pod.Scheduled)
			assert.Equal(t, []ContainerStatus{
				{Name: "main", RestartCount: 3, Waiting: "CrashLoopBackOff", LastTerminated: &Termination{ExitCode: 137}},
				{Name: "exited", Terminated: &Termination{ExitCode: 1, Reason: "Error", Message: "long"}},
			}, pod.ContainerStatuses, "a container that never stopped is left out")
			assert.Equal(t, map[string]string{label: "job"}, pod.Labels)
			assert.Equal(t, in.OwnerReferences, pod.OwnerReferences)
			assert.Equal(t, "999", pod.DeletionCost)

			again, err := TransformPod(pod)
			require.NoError(t, err)
			assert.Same(t, pod, again, "the transform must be idempotent")
		})
	}
}

// TestTransformPodDropsWhatSaysNothing: a Ready condition that is not True,
// a PodScheduled condition that is, and a container that runs and never
// restarted tell the controller nothing its absence does not: a running,
// scheduled job pod keeps no condition and no container status.
func TestTransformPodDropsWhatSaysNothing(t *testing.T) {
	in := fatPod(builders.TrainerOf("job"))
	in.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	in.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	got, err := TransformPod(in)
	require.NoError(t, err)
	assert.False(t, got.(*Pod).Ready)
	assert.Nil(t, got.(*Pod).Scheduled)
	assert.Nil(t, got.(*Pod).ContainerStatuses)

	web := fatPod()
	builders.Unbound()(web)
	builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu.")(web)
	web.Status.Conditions[0].Message = "0/3 nodes are available"
	got, err = TransformPod(web)
	require.NoError(t, err)
	assert.Equal(t, &Condition{Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}, got.(*Pod).Scheduled,
		"another pod keeps PodScheduled only when it is not True, without its message")
}

// TestTransformPodSharesWhatPodsHaveInCommon: the pods of one ReplicaSet
// share their owner references and resources, and equal strings one copy.
func TestTransformPodSharesWhatPodsHaveInCommon(t *testing.T) {
	a, b := fatPod(builders.TrainerOf("job")), fatPod(builders.TrainerOf("job"))
	b.Name = "other"
	b.OwnerReferences = append([]metav1.OwnerReference(nil), a.OwnerReferences...)
	b.Spec.NodeName = strings.Clone(a.Spec.NodeName)
	b.Spec.Containers[0].Resources.Requests = builders.CPUMemory("1000m", "1Gi")
	ga, err := TransformPod(a)
	require.NoError(t, err)
	gb, err := TransformPod(b)
	require.NoError(t, err)
	pa, pb := ga.(*Pod), gb.(*Pod)
	assert.Equal(t, a.OwnerReferences, pb.OwnerReferences)
	assert.Same(t, &pa.OwnerReferences[0], &pb.OwnerReferences[0])
	assert.Equal(t, unsafe.StringData(pa.NodeName), unsafe.StringData(pb.NodeName))
	assert.Same(t, pa.Resources, pb.Resources, "equal resources (1 and 1000m CPU) are shared")

	other := fatPod(builders.TrainerOf("job"), builders.Requests("2", "1Gi"))
	other.OwnerReferences[0].UID = "another-rs"
	got, err := TransformPod(other)
	require.NoError(t, err)
	assert.Equal(t, types.UID("another-rs"), got.(*Pod).OwnerReferences[0].UID, "another owner is not shared")
	assert.NotSame(t, pa.Resources, got.(*Pod).Resources, "other resources are not shared")
	assert.Equal(t, builders.CPUMemory("2", "1Gi"), got.(*Pod).Resources.Containers[0].Requests)

	// What else a pod's requests are computed from tells resources apart.
	always := corev1.ContainerRestartPolicyAlways
	for name, mut := range map[string]func(*corev1.Pod){
		"pod-level resources": func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: builders.CPUMemory("4", "")}
		},
		"an init container that is no sidecar": func(p *corev1.Pod) { p.Spec.InitContainers[0].RestartPolicy = nil },
		"another overhead":                     func(p *corev1.Pod) { p.Spec.Overhead = builders.CPUMemory("20m", "") },
		"a second container": func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "log"})
		},
		"a limit": func(p *corev1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = &always
			p.Spec.InitContainers[0].Resources.Limits = builders.CPUMemory("100m", "")
		},
	} {
		in := fatPod(builders.TrainerOf("job"))
		mut(in)
		got, err := TransformPod(in)
		require.NoError(t, err)
		assert.NotSame(t, pa.Resources, got.(*Pod).Resources, name)
		assert.Equal(t, podResources(&in.Spec), got.(*Pod).Resources, name)
	}
}

// TestTransformPodKeepsTheDeletionCostOfJobPods: the controller reads back
// the annotations it sets on a job's pods — the pod-deletion-cost, the
// removal mark's time, the hosts version — and nothing else of them.
func TestTransformPodKeepsTheDeletionCostOfJobPods(t *testing.T) {
	annotated := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations[v1.AnnotationDeletionCost] = "999"
		p.Annotations[v1.AnnotationMarkedForRemoval] = "2026-01-01T10:00:00Z"
		p.Annotations[v1.AnnotationHostsVersion] = "v1"
		return p
	}
	got, err := TransformPod(annotated(fatPod(builders.TrainerOf("job"))))
	require.NoError(t, err)
	pod := got.(*Pod)
	assert.Equal(t, []string{"999", "2026-01-01T10:00:00Z", "v1"}, []string{pod.DeletionCost, pod.MarkedForRemoval, pod.HostsVersion})

	got, err = TransformPod(annotated(fatPod()))
	require.NoError(t, err)
	pod = got.(*Pod)
	assert.Equal(t, []string{"", "", ""}, []string{pod.DeletionCost, pod.MarkedForRemoval, pod.HostsVersion}, "other pods keep no annotation")
}

// TestTransformPodPreservesWhatTheSnapshotComputes: the tracker's record of
// a cached pod holds the requests, limits, priority, placement and state
// the full pod says.
func TestTransformPodPreservesWhatTheSnapshotComputes(t *testing.T) {
	s := newTracker(Config{})
	waiting := fatPod(builders.Priority(7), builders.NodeSelector(map[string]string{"pool": "cpu"}))
	builders.Unbound()(waiting)
	builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu.")(waiting)
	for _, in := range []*corev1.Pod{fatPod(), fatPod(builders.TrainerOf("job")), waiting} {
		out, err := TransformPod(in.DeepCopy())
		require.NoError(t, err)
		rec := s.newPodRecord(out.(*Pod))
		req, lim := s.reader.podRequestsAndLimits(podResources(&in.Spec))
		assert.Equal(t, req, rec.req)
		assert.Equal(t, lim, rec.lim)
		assert.Equal(t, *in.Spec.Priority, rec.priority)
		assert.Equal(t, in.Spec.NodeName, rec.node)
		assert.Equal(t, in.Status.NominatedNodeName, rec.nominated)
		assert.Equal(t, in.Spec.NodeName == "", rec.unschedulable)
		if rec.unschedulable {
			assert.Equal(t, snapshot.PlacementOf(&in.Spec), rec.placement)
		}
		_, _, member := v1.JobOf(in.Labels)
		assert.Equal(t, member, rec.member != "")
	}
}

func TestTransformPodPassesOtherObjectsThrough(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	got, err := TransformPod(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, got)
}

func TestTransformNode(t *testing.T) {
	n := builders.Node("n1", "4", "8Gi")
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"paddle"}}}
	n.Labels = map[string]string{"zone": "a"}
	got, err := TransformNode(n)
	require.NoError(t, err)
	node := got.(*corev1.Node)
	assert.Nil(t, node.ManagedFields)
	assert.Nil(t, node.Status.Images)
	assert.Equal(t, map[string]string{"zone": "a"}, node.Labels)
	assert.Equal(t, builders.CPUMemory("4", "8Gi"), node.Status.Allocatable)
	assert.Equal(t, []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, node.Status.Conditions)

	full := func() *corev1.Node {
		n := builders.Node("n1", "4", "8Gi", builders.NodeGPU(2))
		n.Labels = map[string]string{"pool": "gpu"}
		n.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		return n
	}
	tracked, again := newTracker(Config{}), newTracker(Config{})
	tracked.onNode(full())
	out, err := TransformNode(full())
	require.NoError(t, err)
	again.onNode(out.(*corev1.Node))
	require.Len(t, again.InquiryResource().Nodes, 1)
	assert.Equal(t, tracked.InquiryResource(), again.InquiryResource(), "the tracker reads the same from the transformed node")
}

func jobOwned(m *metav1.ObjectMeta) {
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob", Name: "job", UID: "uid-job", Controller: ptr.To(true)}}
}

func fatReplicaSet(owned bool) *appsv1.ReplicaSet {
	pod := fatPod(builders.GPU(1), builders.Container("500m", "1Gi"))
	pod.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	pod.Spec.Affinity = &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{},
	}
	replicas := int32(4)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "job-trainer", Namespace: "ns", UID: "uid-rs", ResourceVersion: "7",
			Labels:        map[string]string{v1.LabelTrainer: "job"},
			Annotations:   map[string]string{"edl.paddlepaddle.org/template-hash": "abc"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "edl"}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{Spec: pod.Spec}},
	}
	if owned {
		jobOwned(&rs.ObjectMeta)
	} else {
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}
	}
	return rs
}

// TestTransformReplicaSetKeepsWhatIsRead: of a job's ReplicaSet the
// controller reads the owner, the replicas, the template hash and the
// trainers' account; the autoscaler plans new trainers from the template's
// requests and where its pods may run. Any other ReplicaSet keeps only
// what tells it apart.
func TestTransformReplicaSetKeepsWhatIsRead(t *testing.T) {
	in := fatReplicaSet(true)
	in.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: `pods "t-1" is forbidden: exceeded quota`}}
	in.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "paddlepaddle.org/admission"}}
	in.Spec.Template.Spec.ServiceAccountName = "vision"
	want := in.DeepCopy()
	got, err := TransformReplicaSet(in)
	require.NoError(t, err)
	rs := got.(*appsv1.ReplicaSet)
	assert.Equal(t, want.ObjectMeta.OwnerReferences, rs.OwnerReferences)
	assert.Equal(t, want.Annotations, rs.Annotations)
	assert.Equal(t, want.Labels, rs.Labels)
	assert.Equal(t, int32(4), *rs.Spec.Replicas)
	assert.Equal(t, types.UID("uid-rs"), rs.UID)
	assert.Equal(t, "7", rs.ResourceVersion)
	assert.Equal(t, want.Status.Conditions, rs.Status.Conditions, "the controller reports refused pods from ReplicaFailure")
	assert.Equal(t, want.Spec.Template.Spec.SchedulingGates, rs.Spec.Template.Spec.SchedulingGates, "a gated template marks a queued job")
	assert.Equal(t, "vision", rs.Spec.Template.Spec.ServiceAccountName, "the account the progress Role is bound to")
	assert.Nil(t, rs.ManagedFields)
	assert.Empty(t, rs.Spec.Template.Spec.Containers[0].Env)
	assert.Nil(t, rs.Spec.Template.Spec.Affinity.PodAntiAffinity)
	s := newTracker(Config{})
	wantReq, wantLim := s.PodRequestAndLimits(&want.Spec.Template.Spec)
	req, lim := s.PodRequestAndLimits(&rs.Spec.Template.Spec)
	assert.Equal(t, wantReq, req)
	assert.Equal(t, wantLim, lim)
	require.NotNil(t, snapshot.PlacementOf(&rs.Spec.Template.Spec))
	assert.Equal(t, snapshot.PlacementOf(&want.Spec.Template.Spec).Key(), snapshot.PlacementOf(&rs.Spec.Template.Spec).Key())

	again, err := TransformReplicaSet(rs)
	require.NoError(t, err)
	assert.Equal(t, rs, again, "the transform must be idempotent")

	foreign, err := TransformReplicaSet(fatReplicaSet(false))
	require.NoError(t, err)
	other := foreign.(*appsv1.ReplicaSet)
	assert.Equal(t, fatReplicaSet(false).OwnerReferences, other.OwnerReferences, "the controller tells it is foreign by its owner")
	assert.Equal(t, int32(4), *other.Spec.Replicas)
	assert.Nil(t, other.Annotations)
	assert.Equal(t, corev1.PodTemplateSpec{}, other.Spec.Template)

	tomb := cache.DeletedFinalStateUnknown{Key: "ns/rs"}
	passed, err := TransformReplicaSet(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, passed)
}

// TestTransformServiceKeepsJobServicesWhole: the controller updates a job's
// Service from the cached copy, so it must keep all of it but the managed
// fields; of any other Service only what tells it apart is kept.
func TestTransformServiceKeepsJobServicesWhole(t *testing.T) {
	svc := func(owned bool) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "job-pserver", Namespace: "ns", UID: "uid-svc", ResourceVersion: "3",
				Labels: map[string]string{v1.LabelPserver: "job"}, Annotations: map[string]string{"a": "b"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "edl"}}},
			Spec: corev1.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}, Selector: map[string]string{v1.LabelPserver: "job"},
				Ports: []corev1.ServicePort{{Name: "jobport-0", Port: 7164}}},
		}
		if owned {
			jobOwned(&s.ObjectMeta)
		}
		return s
	}
	want := svc(true)
	want.ManagedFields = nil
	got, err := TransformService(svc(true))
	require.NoError(t, err)
	assert.Equal(t, want, got)

	got, err = TransformService(svc(false))
	require.NoError(t, err)
	assert.Equal(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "job-pserver", Namespace: "ns", UID: "uid-svc",
		ResourceVersion: "3", Labels: map[string]string{v1.LabelPserver: "job"}}}, got)
}

// TestTransformPodSharesEqualMaps: pods of one template share their labels'
// and resource lists' maps; different ones do not.
func TestTransformPodSharesEqualMaps(t *testing.T) {
	a, err := TransformPod(fatPod(builders.TrainerOf("shared-job")))
	require.NoError(t, err)
	b, err := TransformPod(fatPod(builders.TrainerOf("shared-job")))
	require.NoError(t, err)
	c, err := TransformPod(fatPod(builders.TrainerOf("other-job"), builders.Requests("3", "1Gi")))
	require.NoError(t, err)
	pa, pb, pc := a.(*Pod), b.(*Pod), c.(*Pod)
	assert.Equal(t, reflect.ValueOf(pa.Labels).Pointer(), reflect.ValueOf(pb.Labels).Pointer())
	assert.Equal(t, reflect.ValueOf(pa.Resources.Containers[0].Requests).Pointer(),
		reflect.ValueOf(pb.Resources.Containers[0].Requests).Pointer())
	assert.NotEqual(t, reflect.ValueOf(pa.Labels).Pointer(), reflect.ValueOf(pc.Labels).Pointer())
	assert.NotEqual(t, reflect.ValueOf(pa.Resources.Containers[0].Requests).Pointer(),
		reflect.ValueOf(pc.Resources.Containers[0].Requests).Pointer())
	assert.Equal(t, builders.CPUMemory("3", "1Gi"), pc.Resources.Containers[0].Requests)
}

// TestInternTableStartsOverWhenFull: a table that is full forgets what it
// remembered, so that the labels of jobs long gone do not stop the new ones
// from being shared.
func TestInternTableStartsOverWhenFull(t *testing.T) {
	var table internTable[int]
	for i := range maxShared {
		require.Equal(t, i, table.share(strconv.Itoa(i), i))
	}
	assert.Equal(t, 0, table.share("0", 100), "remembered")
	assert.Equal(t, -1, table.share("new", -1), "the table starts over")
	assert.Equal(t, -1, table.share("new", -2), "and shares the new value")
	assert.Equal(t, 100, table.share("0", 100), "what it forgot is shared anew")
}
