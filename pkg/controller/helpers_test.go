package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	"github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
)

const testNamespace = "team-a"

// ---------------------------------------------------------------------------
// TrainingJob builder

type jobMutator func(*v1.TrainingJob)

// newJob builds a plain (not fault-tolerant) job with 2..6 trainers and one
// pserver; mutators change it.
func newJob(name string, muts ...jobMutator) *v1.TrainingJob {
	job := &v1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  testNamespace,
			UID:        types.UID("uid-" + name),
			Generation: 1,
		},
		Spec: v1.TrainingJobSpec{
			Image:   "paddlepaddle/paddlecloud-job",
			Trainer: v1.TrainerSpec{MinInstance: 2, MaxInstance: 6, Entrypoint: "python train.py", Workspace: "/workspace"},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1},
		},
	}
	for _, m := range muts {
		m(job)
	}
	return job
}

func withTrainers(minimum, maximum int32) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.MinInstance, j.Spec.Trainer.MaxInstance = minimum, maximum }
}

func withPservers(n int32) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Pserver.MinInstance, j.Spec.Pserver.MaxInstance = n, n }
}

func faultTolerant() jobMutator { return func(j *v1.TrainingJob) { j.Spec.FaultTolerant = true } }

func withImage(image string) jobMutator { return func(j *v1.TrainingJob) { j.Spec.Image = image } }

func withPorts(port, dense, sparse int32) jobMutator {
	return func(j *v1.TrainingJob) {
		j.Spec.Port, j.Spec.PortsNum, j.Spec.PortsNumForSparse = &port, &dense, &sparse
	}
}

func withMaxRestarts(n int32) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.MaxRestarts = &n }
}

func withTrainerResources(r corev1.ResourceRequirements) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.Resources = r }
}

func withSpec(f func(*v1.TrainingJobSpec)) jobMutator { return func(j *v1.TrainingJob) { f(&j.Spec) } }

func withGeneration(g int64) jobMutator { return func(j *v1.TrainingJob) { j.Generation = g } }

func withPhase(phase v1.TrainingJobPhase, reason, message string) jobMutator {
	return func(j *v1.TrainingJob) {
		j.Status.Phase, j.Status.Reason, j.Status.Message = phase, reason, message
	}
}

func withCondition(kind string, status metav1.ConditionStatus, reason string) jobMutator {
	return func(j *v1.TrainingJob) {
		j.Status.Conditions = append(j.Status.Conditions, metav1.Condition{
			Type: kind, Status: status, Reason: reason, Message: reason,
			LastTransitionTime: metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
		})
	}
}

func resourceList(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// ---------------------------------------------------------------------------
// Pod builder

type podMutator func(*corev1.Pod)

// newPod builds a pending pod of a job's role, labelled as its ReplicaSet's
// pods are.
func newPod(job *v1.TrainingJob, role v1.Role, name string, muts ...podMutator) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelFor(role): job.Name},
			ResourceVersion: "1",
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: role.Name(), Image: job.Spec.Image}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: role.Name()}},
		},
	}
	for _, m := range muts {
		m(pod)
	}
	return pod
}

func running() podMutator {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
}

func ready() podMutator {
	return func(p *corev1.Pod) {
		running()(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		p.Status.ContainerStatuses[0].Ready = true
	}
}

func notReady() podMutator {
	return func(p *corev1.Pod) {
		running()(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}

// exited: the container's current state is terminated with code.
func exited(code int32) podMutator {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}

// lastExited: the container's previous run terminated with code.
func lastExited(code int32) podMutator {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}

func restarts(n int32) podMutator {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = n }
}

func deleting() podMutator {
	return func(p *corev1.Pod) {
		now := metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		p.DeletionTimestamp = &now
	}
}

func podPhase(phase corev1.PodPhase) podMutator {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

func unschedulable(message string) podMutator {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message,
		})
	}
}

func onNode(node string) podMutator { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func withPodRV(rv string) podMutator { return func(p *corev1.Pod) { p.ResourceVersion = rv } }

// ---------------------------------------------------------------------------
// Other objects

type rsMutator func(*appsv1.ReplicaSet)

// ownedReplicaSet is the ReplicaSet the controller builds for a role.
func ownedReplicaSet(job *v1.TrainingJob, role v1.Role, replicas int32, muts ...rsMutator) *appsv1.ReplicaSet {
	rs := ReplicaSet(job, role, replicas, nil)
	for _, m := range muts {
		m(rs)
	}
	return rs
}

func noOwner() rsMutator { return func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil } }

func ownedByUID(uid types.UID) rsMutator {
	return func(rs *appsv1.ReplicaSet) { rs.OwnerReferences[0].UID = uid }
}

func controlledByKind(apiVersion, kind, name string) rsMutator {
	return func(rs *appsv1.ReplicaSet) {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name)},
			schema.FromAPIVersionAndKind(apiVersion, kind))}
	}
}

func withRSRV(rv string) rsMutator { return func(rs *appsv1.ReplicaSet) { rs.ResourceVersion = rv } }

// ---------------------------------------------------------------------------
// Controller fixture: fake clientsets, informers that are never started and
// whose indexers the tests fill, a fake recorder.

var (
	gvrJobs        = v1.SchemeGroupVersion.WithResource("trainingjobs")
	gvkJobs        = v1.SchemeGroupVersion.WithKind("TrainingJob")
	gvrReplicaSets = appsv1.SchemeGroupVersion.WithResource("replicasets")
	gvkReplicaSets = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	gvrServices    = corev1.SchemeGroupVersion.WithResource("services")
	gvkServices    = corev1.SchemeGroupVersion.WithKind("Service")
)

type fixture struct {
	t        *testing.T
	ctx      context.Context
	kube     *k8sfake.Clientset
	tj       *tjfake.Clientset
	kubeInf  informers.SharedInformerFactory
	tjInf    externalversions.SharedInformerFactory
	recorder *record.FakeRecorder
	c        *Controller
}

func newFixture(t *testing.T, configure ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{
		t:        t,
		ctx:      context.Background(),
		kube:     k8sfake.NewClientset(),
		tj:       tjfake.NewClientset(),
		recorder: record.NewFakeRecorder(100),
	}
	f.kubeInf = informers.NewSharedInformerFactory(f.kube, 0)
	f.tjInf = externalversions.NewSharedInformerFactory(f.tj, 0)
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	cfg := Config{
		KubeClient:         f.kube,
		TJClient:           f.tj,
		JobInformer:        f.tjInf.Paddlepaddle().V1().TrainingJobs(),
		ReplicaSetInformer: f.kubeInf.Apps().V1().ReplicaSets(),
		ServiceInformer:    f.kubeInf.Core().V1().Services(),
		PodInformer:        f.kubeInf.Core().V1().Pods(),
		Recorder:           f.recorder,
		Logger:             logger,
	}
	for _, c := range configure {
		c(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	f.c = c
	return f
}

// withMetrics reports the fixture's controller's measurements to m.
func withMetrics(m Metrics) func(*Config) {
	return func(c *Config) { c.Metrics = m }
}

// withGPUResources counts the named resources as GPUs.
func withGPUResources(names []corev1.ResourceName) func(*Config) {
	return func(c *Config) { c.GPUResources = names }
}

func (f *fixture) jobIndexer() cache.Indexer {
	return f.tjInf.Paddlepaddle().V1().TrainingJobs().Informer().GetIndexer()
}

func (f *fixture) rsIndexer() cache.Indexer {
	return f.kubeInf.Apps().V1().ReplicaSets().Informer().GetIndexer()
}

func (f *fixture) svcIndexer() cache.Indexer {
	return f.kubeInf.Core().V1().Services().Informer().GetIndexer()
}

func (f *fixture) podIndexer() cache.Indexer {
	return f.kubeInf.Core().V1().Pods().Informer().GetIndexer()
}

// addJob stores the job server-side and puts the stored copy (with its
// resourceVersion) in the informer's indexer.
func (f *fixture) addJob(job *v1.TrainingJob) *v1.TrainingJob {
	f.t.Helper()
	require.NoError(f.t, f.tj.Tracker().Add(job))
	stored, err := f.tj.Tracker().Get(gvrJobs, job.Namespace, job.Name)
	require.NoError(f.t, err)
	require.NoError(f.t, f.jobIndexer().Add(stored))
	return stored.(*v1.TrainingJob)
}

// updateJob replaces the job server-side (spec and status) and in the indexer.
func (f *fixture) updateJob(job *v1.TrainingJob) {
	f.t.Helper()
	require.NoError(f.t, f.tj.Tracker().Update(gvrJobs, job, job.Namespace))
	stored, err := f.tj.Tracker().Get(gvrJobs, job.Namespace, job.Name)
	require.NoError(f.t, err)
	require.NoError(f.t, f.jobIndexer().Update(stored))
}

func (f *fixture) getJob(name string) *v1.TrainingJob {
	f.t.Helper()
	obj, err := f.tj.Tracker().Get(gvrJobs, testNamespace, name)
	require.NoError(f.t, err)
	return obj.(*v1.TrainingJob).DeepCopy()
}

func (f *fixture) addReplicaSet(rs *appsv1.ReplicaSet) {
	f.t.Helper()
	require.NoError(f.t, f.kube.Tracker().Add(rs))
	stored, err := f.kube.Tracker().Get(gvrReplicaSets, rs.Namespace, rs.Name)
	require.NoError(f.t, err)
	require.NoError(f.t, f.rsIndexer().Add(stored))
}

func (f *fixture) updateReplicaSet(rs *appsv1.ReplicaSet) {
	f.t.Helper()
	require.NoError(f.t, f.kube.Tracker().Update(gvrReplicaSets, rs, rs.Namespace))
	stored, err := f.kube.Tracker().Get(gvrReplicaSets, rs.Namespace, rs.Name)
	require.NoError(f.t, err)
	require.NoError(f.t, f.rsIndexer().Update(stored))
}

func (f *fixture) getReplicaSet(name string) *appsv1.ReplicaSet {
	f.t.Helper()
	obj, err := f.kube.Tracker().Get(gvrReplicaSets, testNamespace, name)
	require.NoError(f.t, err)
	return obj.(*appsv1.ReplicaSet).DeepCopy()
}

func (f *fixture) addService(svc *corev1.Service) {
	f.t.Helper()
	require.NoError(f.t, f.kube.Tracker().Add(svc))
	stored, err := f.kube.Tracker().Get(gvrServices, svc.Namespace, svc.Name)
	require.NoError(f.t, err)
	require.NoError(f.t, f.svcIndexer().Add(stored))
}

// addPods puts pods in the pod indexer only: the controller never writes pods.
func (f *fixture) addPods(pods ...*corev1.Pod) {
	f.t.Helper()
	for _, p := range pods {
		require.NoError(f.t, f.podIndexer().Add(p))
	}
}

// addJobObjects seeds everything the controller would have created for the
// job, with the trainer ReplicaSet at the given replicas.
func (f *fixture) addJobObjects(job *v1.TrainingJob, trainers int32) {
	f.t.Helper()
	for _, role := range roles(job) {
		replicas := desiredReplicas(job, role, &trainers, false)
		f.addReplicaSet(ReplicaSet(job, role, replicas, nil))
		if role != v1.RoleTrainer {
			f.addService(Service(job, role))
		}
	}
}

// feedBack plays the informers: it copies what the fake API servers hold
// into the indexers, as the watch events would.
func (f *fixture) feedBack() {
	f.t.Helper()
	copyAll := func(tracker clienttesting.ObjectTracker, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, indexer cache.Indexer) {
		list, err := tracker.List(gvr, gvk, testNamespace)
		require.NoError(f.t, err)
		items, err := meta.ExtractList(list)
		require.NoError(f.t, err)
		for _, obj := range items {
			require.NoError(f.t, indexer.Update(obj))
		}
	}
	copyAll(f.tj.Tracker(), gvrJobs, gvkJobs, f.jobIndexer())
	copyAll(f.kube.Tracker(), gvrReplicaSets, gvkReplicaSets, f.rsIndexer())
	copyAll(f.kube.Tracker(), gvrServices, gvkServices, f.svcIndexer())
}

// kubeObjects are the ReplicaSets and Services the fake API server holds.
func (f *fixture) kubeObjects() []runtime.Object {
	f.t.Helper()
	rs, err := f.kube.Tracker().List(gvrReplicaSets, gvkReplicaSets, testNamespace)
	require.NoError(f.t, err)
	svc, err := f.kube.Tracker().List(gvrServices, gvkServices, testNamespace)
	require.NoError(f.t, err)
	return []runtime.Object{rs, svc}
}

// reset forgets the recorded actions and events.
func (f *fixture) reset() {
	f.kube.ClearActions()
	f.tj.ClearActions()
	f.events()
}

func (f *fixture) sync(name string) error {
	return f.c.sync(f.ctx, testNamespace+"/"+name)
}

// settle syncs and feeds back until a sync writes nothing, then forgets
// what was recorded on the way. It returns the events of all those syncs.
func (f *fixture) settle(name string) []string {
	f.t.Helper()
	var events []string
	for i := 0; i < 5; i++ {
		f.kube.ClearActions()
		f.tj.ClearActions()
		require.NoError(f.t, f.sync(name))
		f.feedBack()
		events = append(events, f.events()...)
		if len(f.writes()) == 0 {
			f.reset()
			return events
		}
	}
	require.Failf(f.t, "no steady state", "job %s still writes after 5 syncs: %v", name, f.writeStrings())
	return nil
}

// writes are the recorded API actions other than list and watch.
func (f *fixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range append(f.kube.Actions(), f.tj.Actions()...) {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// describe renders an action as "verb resource[/subresource] name".
func describe(a clienttesting.Action) string {
	res := a.GetResource().Resource
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	name := ""
	switch act := a.(type) {
	case clienttesting.CreateAction: // UpdateAction has the same methods: updates match here too
		if m, ok := act.GetObject().(metav1.Object); ok {
			name = m.GetName()
		}
	case clienttesting.PatchAction:
		name = act.GetName()
	case clienttesting.DeleteAction:
		name = act.GetName()
	case clienttesting.GetAction:
		name = act.GetName()
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", a.GetVerb(), res, name))
}

func (f *fixture) writeStrings() []string {
	var out []string
	for _, a := range f.writes() {
		out = append(out, describe(a))
	}
	return out
}

// writesOf are the recorded writes to one resource, described.
func (f *fixture) writesOf(resource string) []string {
	var out []string
	for _, a := range f.writes() {
		if a.GetResource().Resource == resource {
			out = append(out, describe(a))
		}
	}
	return out
}

// patchOf returns the body of the one patch of the named object.
func (f *fixture) patchOf(resource, name string) []byte {
	f.t.Helper()
	var bodies [][]byte
	for _, a := range f.writes() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetResource().Resource == resource && p.GetName() == name {
			require.Equal(f.t, types.JSONPatchType, p.GetPatchType())
			bodies = append(bodies, p.GetPatch())
		}
	}
	require.Len(f.t, bodies, 1, "patches of %s %s", resource, name)
	return bodies[0]
}

// statusWrites are the job objects written to the status subresource.
func (f *fixture) statusWrites() []*v1.TrainingJob {
	var out []*v1.TrainingJob
	for _, a := range f.tj.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*v1.TrainingJob))
		}
	}
	return out
}

// events drains the recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// queued drains the workqueue (without blocking) and returns its keys sorted.
func (f *fixture) queued() []string {
	var out []string
	for f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

// condition finds a condition by type.
func condition(status v1.TrainingJobStatus, kind string) *metav1.Condition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == kind {
			return &status.Conditions[i]
		}
	}
	return nil
}
