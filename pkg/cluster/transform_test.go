package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// fatPod is a pod as the API server returns it, with much that EDL never reads.
func fatPod(muts ...podMutator) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	prio := int32(100)
	p := newPod("fat", append([]podMutator{onNode("n1"), withRequests("1", "1Gi"), withLimits("2", "2Gi"), withOverhead("10m", "")}, muts...)...)
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
		Command: []string{"etcd"}, Resources: corev1.ResourceRequirements{Requests: rl("100m", "")}}}
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
	always := corev1.ContainerRestartPolicyAlways
	in := fatPod()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "fat", Namespace: "ns", UID: "uid-fat", ResourceVersion: "1", CreationTimestamp: in.CreationTimestamp,
			OwnerReferences: in.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", Priority: in.Spec.Priority, PriorityClassName: "high", Overhead: in.Spec.Overhead,
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: rl("1", "1Gi"), Limits: rl("2", "2Gi")}}},
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always,
				Resources: corev1.ResourceRequirements{Requests: rl("100m", "")}}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			NominatedNodeName: "n2",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}
	got, err := TransformPod(in)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Nil(t, got.(*corev1.Pod).ManagedFields)

	again, err := TransformPod(got)
	require.NoError(t, err)
	assert.Equal(t, want, again, "the transform must be idempotent")
}

func TestTransformPodKeepsStatusOfJobPods(t *testing.T) {
	for _, label := range []string{v1.LabelTrainer, v1.LabelPserver, v1.LabelMaster} {
		t.Run(label, func(t *testing.T) {
			in := fatPod(withLabel(label, "job"))
			status := *in.Status.DeepCopy()
			got, err := TransformPod(in)
			require.NoError(t, err)
			pod := got.(*corev1.Pod)
			assert.Equal(t, status, pod.Status)
			assert.Equal(t, int32(137), pod.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode)
			assert.Equal(t, map[string]string{label: "job"}, pod.Labels)
			assert.Nil(t, pod.Annotations)
			assert.Empty(t, pod.Spec.Containers[0].Env)
		})
	}
}

// TestTransformPodKeepsTheDeletionCostOfJobPods: the controller reads back
// the pod-deletion-cost it sets on trainers, and nothing else of the
// annotations.
func TestTransformPodKeepsTheDeletionCostOfJobPods(t *testing.T) {
	annotated := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations[v1.AnnotationDeletionCost] = "999"
		return p
	}
	got, err := TransformPod(annotated(fatPod(trainerOf("job"))))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{v1.AnnotationDeletionCost: "999"}, got.(*corev1.Pod).Annotations)

	got, err = TransformPod(annotated(fatPod()))
	require.NoError(t, err)
	assert.Nil(t, got.(*corev1.Pod).Annotations, "other pods keep no annotation")
}

func TestTransformPodPreservesWhatTheSnapshotComputes(t *testing.T) {
	for _, in := range []*corev1.Pod{fatPod(), fatPod(trainerOf("job")), fatPod(unschedulablePod(), withPriority(7))} {
		s := newTracker(Config{})
		want := s.newPodRecord(in.DeepCopy())
		out, err := TransformPod(in)
		require.NoError(t, err)
		assert.Equal(t, want, s.newPodRecord(out.(*corev1.Pod)))
	}
}

func TestTransformPodPassesOtherObjectsThrough(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	got, err := TransformPod(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, got)
}

func TestTransformNode(t *testing.T) {
	n := newNode("n1", "4", "8Gi")
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"paddle"}}}
	n.Labels = map[string]string{"zone": "a"}
	got, err := TransformNode(n)
	require.NoError(t, err)
	node := got.(*corev1.Node)
	assert.Nil(t, node.ManagedFields)
	assert.Nil(t, node.Status.Images)
	assert.Equal(t, map[string]string{"zone": "a"}, node.Labels)
	assert.Equal(t, rl("4", "8Gi"), node.Status.Allocatable)
}

func TestTransformPodKeepsSchedulingGatesWhileUnbound(t *testing.T) {
	p := newPod("q", memberOf("q", v1.RoleTrainer), withPhase(corev1.PodPending))
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1.SchedulingGateAdmission}}
	obj, err := TransformPod(p)
	require.NoError(t, err)
	assert.Equal(t, p.Spec.SchedulingGates, obj.(*corev1.Pod).Spec.SchedulingGates, "the controller removes them")
}
