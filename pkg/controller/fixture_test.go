package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/paddlepaddle/edl/pkg/frameworks"
	policyv1 "k8s.io/api/policy/v1"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/paddlepaddle/edl/pkg/cluster"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	"github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
)

// ---------------------------------------------------------------------------
// Controller fixture: fake clientsets, informers that are never started and
// whose indexers the tests fill, a fake recorder. What goes into an indexer
// passes through the transform cmd/edl installs on that informer first, as
// it would in a running informer, so that every test also checks that the
// controller needs nothing the transforms drop.

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
		ConfigMapInformer:  f.kubeInf.Core().V1().ConfigMaps(),
		PDBInformer:        f.kubeInf.Policy().V1().PodDisruptionBudgets(),
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
	require.NoError(f.t, f.rsIndexer().Add(cached(f.t, stored)))
}

func (f *fixture) updateReplicaSet(rs *appsv1.ReplicaSet) {
	f.t.Helper()
	require.NoError(f.t, f.kube.Tracker().Update(gvrReplicaSets, rs, rs.Namespace))
	stored, err := f.kube.Tracker().Get(gvrReplicaSets, rs.Namespace, rs.Name)
	require.NoError(f.t, err)
	require.NoError(f.t, f.rsIndexer().Update(cached(f.t, stored)))
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
	require.NoError(f.t, f.svcIndexer().Add(cached(f.t, stored)))
}

// addPods puts pods in the pod indexer only: the controller never writes pods.
func (f *fixture) addPods(pods ...*corev1.Pod) {
	f.t.Helper()
	for _, p := range pods {
		require.NoError(f.t, f.podIndexer().Add(cached(f.t, p.DeepCopy())))
	}
}

// addJobObjects seeds everything the controller would have created for the
// job, with the trainer ReplicaSet at the given replicas.
func (f *fixture) addJobObjects(job *v1.TrainingJob, trainers int32) {
	f.t.Helper()
	if frameworks.Training(&job.Spec) != nil {
		require.NoError(f.t, f.kubeInf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(MasterDisruptionBudget(job)))
	}
	require.NoError(f.t, f.kubeInf.Core().V1().ConfigMaps().Informer().GetIndexer().Add(ProgressConfigMap(job)))
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
			require.NoError(f.t, indexer.Update(cached(f.t, obj)))
		}
	}
	copyAll(f.tj.Tracker(), gvrJobs, gvkJobs, f.jobIndexer())
	copyAll(f.kube.Tracker(), gvrReplicaSets, gvkReplicaSets, f.rsIndexer())
	copyAll(f.kube.Tracker(), gvrServices, gvkServices, f.svcIndexer())
	copyAll(f.kube.Tracker(), corev1.SchemeGroupVersion.WithResource("configmaps"), corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		f.kubeInf.Core().V1().ConfigMaps().Informer().GetIndexer())
	copyAll(f.kube.Tracker(), policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		f.kubeInf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer())
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

// cached is obj as the informer of its kind keeps it: through the transform
// cmd/edl installs (the job informer has none).
func cached(t *testing.T, obj runtime.Object) any {
	t.Helper()
	transform := map[string]cache.TransformFunc{
		"*v1.ReplicaSet": cluster.TransformReplicaSet,
		"*v1.Service":    cluster.TransformService,
		"*v1.Pod":        cluster.TransformPod,
	}[fmt.Sprintf("%T", obj)]
	if transform == nil {
		return obj
	}
	out, err := transform(obj)
	require.NoError(t, err)
	return out
}

// testNamespace is the namespace of the tests' jobs.
const testNamespace = "team-a"

// slim returns a pod as the informer caches it (cluster.TransformPod), or
// pods as a slice of them.
func slim(pods ...*corev1.Pod) []*cluster.Pod {
	out := make([]*cluster.Pod, len(pods))
	for i, p := range pods {
		out[i], _ = cluster.PodOf(p.DeepCopy())
	}
	return out
}
