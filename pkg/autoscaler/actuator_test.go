package autoscaler

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/controller"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// actuatorFixture wires an Autoscaler to fake clientsets whose informers the
// test seeds directly.
type actuatorFixture struct {
	t        *testing.T
	kube     *fake.Clientset
	tj       *tjfake.Clientset
	kubeInf  informers.SharedInformerFactory
	tjInf    tjinformers.SharedInformerFactory
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	scaler   *Autoscaler
	tracker  *cluster.Tracker
}

func newActuatorFixture(t *testing.T, cfg Config, objects ...runtime.Object) *actuatorFixture {
	f := &actuatorFixture{t: t, recorder: record.NewFakeRecorder(100),
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))}
	var kubeObjs, tjObjs []runtime.Object
	for _, o := range objects {
		switch o.(type) {
		case *v1.TrainingJob, *v1.TrainingQueue:
			tjObjs = append(tjObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	f.kube = fake.NewClientset(kubeObjs...)
	f.tj = tjfake.NewClientset(tjObjs...)
	f.kubeInf = informers.NewSharedInformerFactory(f.kube, 0)
	f.tjInf = tjinformers.NewSharedInformerFactory(f.tj, 0)
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	var err error
	f.tracker, err = cluster.New(cluster.Config{PodInformer: f.kubeInf.Core().V1().Pods(), NodeInformer: f.kubeInf.Core().V1().Nodes()})
	require.NoError(t, err)
	cfg.KubeClient, cfg.TJClient, cfg.Tracker = f.kube, f.tj, f.tracker
	cfg.JobInformer = f.tjInf.Paddlepaddle().V1().TrainingJobs()
	cfg.ReplicaSetInformer = f.kubeInf.Apps().V1().ReplicaSets()
	cfg.PriorityClassInformer = f.kubeInf.Scheduling().V1().PriorityClasses()
	cfg.QueueInformer = f.tjInf.Paddlepaddle().V1().TrainingQueues()
	cfg.PodInformer, cfg.NodeInformer = f.kubeInf.Core().V1().Pods(), f.kubeInf.Core().V1().Nodes()
	cfg.Recorder, cfg.Logger, cfg.Clock = f.recorder, logger, f.clock
	f.scaler = New(cfg)

	ctx, cancel := context.WithCancel(context.Background())
	f.kubeInf.Start(ctx.Done())
	f.tjInf.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.kubeInf.Shutdown()
		f.tjInf.Shutdown()
	})
	for _, synced := range f.scaler.synced {
		require.Eventually(t, synced, 5*time.Second, time.Millisecond)
	}
	f.kube.ClearActions()
	f.tj.ClearActions()
	return f
}

// writes lists the recorded write actions of both clientsets.
func (f *actuatorFixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range append(f.kube.Actions(), f.tj.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

// node is a Ready node of cpu and memory that takes 110 pods.
func node(name, cpu, memory string) *corev1.Node {
	return builders.Node(name, cpu, memory, builders.NodePods(110), builders.WithCapacity())
}

// elasticJob returns a Running job with trainers min..max and its trainer
// ReplicaSet at replicas, with running trainer pods on node n1.
func elasticJob(name string, minInstance, maxInstance, replicas int32, opts ...builders.JobOption) []runtime.Object {
	job := builders.Job(name, "ns", append([]builders.JobOption{
		builders.Trainers(minInstance, maxInstance),
		builders.TrainerResources(corev1.ResourceRequirements{Requests: builders.CPUMemory("1", "1Gi")}),
		builders.JobPhase(v1.PhaseRunning, "", ""),
	}, opts...)...)
	job.UID, job.ResourceVersion = types.UID(name+"-uid"), "1"
	rs := builders.ReplicaSet(controller.ReplicaSet(job, v1.RoleTrainer, replicas, nil), builders.ReplicaSetUID(types.UID(name+"-trainer-uid")))
	out := []runtime.Object{job, rs}
	for i := range replicas {
		out = append(out, builders.TemplatePod(rs, name+"-trainer-"+string(rune('a'+i)), builders.OnNode("n1"),
			builders.Phase(corev1.PodRunning), builders.CreatedAt(metav1.NewTime(time.Unix(int64(i), 0)))))
	}
	return out
}

func objects(groups ...[]runtime.Object) []runtime.Object {
	var out []runtime.Object
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func TestRunOnceGrowsAndRecords(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)

	actions := f.scaler.RunOnce(context.Background())
	require.Len(t, actions, 1)
	assert.Equal(t, "ns/a", actions[0].Job)
	assert.Equal(t, int32(1), actions[0].From)
	assert.Equal(t, int32(4), actions[0].To)

	writes := f.writes()
	require.Len(t, writes, 2, "one ReplicaSet patch and one status patch for the decision and the Scaling condition")
	rsPatch := writes[0].(clienttesting.PatchAction)
	assert.Equal(t, "a-trainer", rsPatch.GetName())
	assert.Equal(t, types.JSONPatchType, rsPatch.GetPatchType())
	record := v1.LastScaleAnnotation(v1.ScaleRecord{Time: metav1.NewTime(f.clock.Now()), From: 1, To: 4, Reason: actions[0].Reason})
	assert.JSONEq(t, `[{"op":"test","path":"/metadata/uid","value":"a-trainer-uid"},{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":4},`+
		`{"op":"add","path":"/metadata/annotations/edl.paddlepaddle.org~1last-scale","value":`+strconv.Quote(record)+`}]`, string(rsPatch.GetPatch()),
		"the record goes on the ReplicaSet with the replicas")
	rs, err := f.kube.AppsV1().ReplicaSets("ns").Get(context.Background(), "a-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(4), *rs.Spec.Replicas)
	assert.Equal(t, record, rs.Annotations[v1.AnnotationLastScale])
	assert.Contains(t, rs.Annotations, controller.AnnotationTemplateHash, "the other annotations stay")

	statusPatch := writes[1].(clienttesting.PatchAction)
	assert.Equal(t, "status", statusPatch.GetSubresource())
	assert.Equal(t, types.JSONPatchType, statusPatch.GetPatchType())
	assert.Equal(t, []string{"Normal Scaled Scaled trainers from 1 to 4: " + actions[0].Reason}, drain(f.recorder))

	job := f.waitForJob("a", func(j *v1.TrainingJob) bool { return len(j.Status.Conditions) == 1 && j.Status.LastScale != nil })
	assert.Equal(t, v1.ScalingAtMax, job.Status.Conditions[0].Reason)
	assert.Equal(t, "grows by 3 to its maximum, 4 of 1..4 trainers", job.Status.Conditions[0].Message)
	assert.True(t, job.Status.LastScale.Time.Time.Equal(f.clock.Now()), "recorded at the plan's time")
	job.Status.LastScale.Time = metav1.Time{}
	assert.Equal(t, v1.ScaleRecord{From: 1, To: 4, Reason: actions[0].Reason}, *job.Status.LastScale)
}

// TestRunOnceRecordsTheScalingWhenTheConditionLosesARace: the cooldown reads
// lastScale, so a status patch that loses to a concurrent writer is followed
// by the record alone, with no precondition.
func TestRunOnceRecordsTheScalingWhenTheConditionLosesARace(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	f.tj.PrependReactor("patch", "trainingjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.PatchAction).GetPatchType() != types.JSONPatchType {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "paddlepaddle.org", Resource: "trainingjobs"}, "a", nil)
	})
	actions := f.scaler.RunOnce(context.Background())
	require.Len(t, actions, 1)

	var statusPatches []clienttesting.PatchAction
	for _, w := range f.writes() {
		if w.GetSubresource() == "status" {
			statusPatches = append(statusPatches, w.(clienttesting.PatchAction))
		}
	}
	require.Len(t, statusPatches, 2, "the combined patch, lost, then the record alone")
	assert.Equal(t, types.MergePatchType, statusPatches[1].GetPatchType())
	job := f.waitForJob("a", func(j *v1.TrainingJob) bool { return j.Status.LastScale != nil })
	assert.Equal(t, int32(4), job.Status.LastScale.To)
	assert.Empty(t, job.Status.Conditions, "the condition is retried by the next plan")
}

func TestRunOnceWritesNothingWhenNothingChanges(t *testing.T) {
	// The job is at its max and its Scaling condition already says so.
	objs := objects(elasticJob("a", 1, 2, 2, withCondition(metav1.Condition{Type: v1.ConditionScaling, Status: metav1.ConditionTrue,
		Reason: v1.ScalingAtMax, Message: "at its maximum, 2 of 1..2 trainers"})), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	assert.Empty(t, f.scaler.RunOnce(context.Background()))
	assert.Empty(t, f.writes())
	assert.Empty(t, drain(f.recorder))
}

func TestRunOnceDryRunPatchesNothing(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, DryRun: true}, objs...)
	assert.Len(t, f.scaler.RunOnce(context.Background()), 1, "the plan is made")
	assert.Empty(t, f.writes(), "and not applied")
}

// TestRunOnceLeavesJobsAlone: only Running, elastic jobs that control their
// trainer ReplicaSet move.
func TestRunOnceLeavesJobsAlone(t *testing.T) {
	cases := map[string][]runtime.Object{
		"pending job":   elasticJob("a", 1, 4, 1, func(j *v1.TrainingJob) { j.Status.Phase = v1.PhasePending }),
		"succeeded job": elasticJob("a", 1, 4, 1, func(j *v1.TrainingJob) { j.Status.Phase = v1.PhaseSucceeded }),
		"failed job":    elasticJob("a", 1, 4, 1, func(j *v1.TrainingJob) { j.Status.Phase = v1.PhaseFailed }),
		"min == max":    elasticJob("a", 3, 3, 3),
		"foreign ReplicaSet": func() []runtime.Object {
			objs := elasticJob("a", 1, 4, 1)
			objs[1].(*appsv1.ReplicaSet).OwnerReferences = nil
			return objs
		}(),
	}
	for name, objs := range cases {
		t.Run(name, func(t *testing.T) {
			f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, append(objs, node("n1", "10", "64Gi"))...)
			assert.Empty(t, f.scaler.RunOnce(context.Background()))
			assert.Empty(t, f.writes())
		})
	}
}

// TestRunOnceLosesToAConcurrentWriter: the patch tests the count it planned
// from, so a write in between wins and nothing is recorded.
func TestRunOnceLosesToAConcurrentWriter(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	// Someone scaled the ReplicaSet after the informer saw it: the API server
	// fails the patch's test operation.
	f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "a-trainer", nil)
	})
	require.Len(t, f.scaler.RunOnce(context.Background()), 1)
	for _, w := range f.writes() {
		assert.NotEqual(t, "status", w.GetSubresource(), "a lost patch records no decision")
	}
	assert.Empty(t, drain(f.recorder))
}

func TestPriorityResolution(t *testing.T) {
	objs := []runtime.Object{
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Value: 10, GlobalDefault: true},
	}
	f := newActuatorFixture(t, Config{Interval: time.Second}, objs...)
	assert.Equal(t, int32(1000), f.scaler.priority("high"))
	assert.Equal(t, int32(10), f.scaler.priority(""), "no class: the global default")
	assert.Equal(t, int32(0), f.scaler.priority("missing"), "an unknown class: 0, as admission would have refused the pod")
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// fakeMetrics keeps what the autoscaler reports; Scaled and ScaleFailed
// are called by several jobs' scalings at once.
type fakeMetrics struct {
	mu        sync.Mutex
	planned   [][]planner.Job
	snaps     []snapshot.Snapshot
	scaled    []planner.ScaleAction
	explained [][]planner.Explanation
	failed    []planner.ScaleAction
	lost      []bool
	queued    [][]time.Duration
	admitted  []time.Duration
	requeued  []bool
	teams     [][]planner.TeamShare
}

func (r *fakeMetrics) Teams(shares []planner.TeamShare) { r.teams = append(r.teams, shares) }

func (r *fakeMetrics) ScaleFailed(act planner.ScaleAction, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, act)
	r.lost = append(r.lost, lost)
}

func (r *fakeMetrics) Queued(waits []time.Duration) { r.queued = append(r.queued, waits) }

func (r *fakeMetrics) Admitted(wait time.Duration) { r.admitted = append(r.admitted, wait) }
func (r *fakeMetrics) Requeued(final bool)         { r.requeued = append(r.requeued, final) }

func (r *fakeMetrics) Explained(jobs []planner.Explanation) { r.explained = append(r.explained, jobs) }

func (r *fakeMetrics) Planned(_ time.Duration, snap snapshot.Snapshot, jobs []planner.Job) {
	r.planned = append(r.planned, jobs)
	r.snaps = append(r.snaps, snap)
}

func (r *fakeMetrics) Scaled(act planner.ScaleAction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scaled = append(r.scaled, act)
}

// TestRunOnceReportsToTheMetrics: every cycle is reported with the jobs it
// planned for; only applied actions count as scaled.
func TestRunOnceReportsToTheMetrics(t *testing.T) {
	lostRace := func(f *actuatorFixture) {
		f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "a-trainer", nil)
		})
	}
	refused := func(f *actuatorFixture) {
		f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		})
	}
	cases := []struct {
		name       string
		dryRun     bool
		setup      func(*actuatorFixture)
		wantScaled int
		wantLost   []bool
	}{
		{name: "applied", wantScaled: 1},
		{name: "dry run", dryRun: true},
		{name: "lost to a concurrent writer", setup: lostRace, wantLost: []bool{true}},
		{name: "refused by the API server", setup: refused, wantLost: []bool{false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &fakeMetrics{}
			objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "10", "64Gi")})
			f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, DryRun: c.dryRun, Metrics: rec}, objs...)
			if c.setup != nil {
				c.setup(f)
			}
			actions := f.scaler.RunOnce(context.Background())
			require.Len(t, actions, 1)

			require.Len(t, rec.planned, 1, "one cycle, one report")
			require.Len(t, rec.teams, 1, "the teams' shares are reported every cycle")
			require.Empty(t, rec.teams[0], "no TrainingQueue, no team")
			require.Len(t, rec.planned[0], 1)
			job := rec.planned[0][0]
			assert.Equal(t, "ns/a", job.Key)
			assert.Equal(t, int32(1), job.Current)
			assert.Len(t, job.Trainers, 1, "the trainers come from the snapshot")
			assert.Equal(t, int64(10000), rec.snaps[0].CPUTotalMilli)

			require.Len(t, rec.explained, 1, "one cycle, one count by cause")
			require.Len(t, rec.explained[0], 1)
			wantLimit := planner.LimitAtMax // grown to its max
			if c.dryRun {
				wantLimit = planner.LimitDryRun
			}
			assert.Equal(t, wantLimit, rec.explained[0][0].Limit, "a dry run holds the job where it is")

			assert.Equal(t, c.wantLost, rec.lost, "failed scalings, and whether each lost a race")
			require.Len(t, rec.queued, 1, "the queue is reported every cycle")
			assert.Empty(t, rec.queued[0], "no job waits")
			require.Len(t, rec.scaled, c.wantScaled)
			if c.wantScaled > 0 {
				assert.Equal(t, actions[0], rec.scaled[0])
				assert.Equal(t, planner.CauseIdle, rec.scaled[0].Cause)
			}
		})
	}
}

// TestRunStoppedBeforeTheCachesSyncIsNoError: a replica told to stop while
// it starts exits cleanly.
func TestRunStoppedBeforeTheCachesSyncIsNoError(t *testing.T) {
	kube := fake.NewClientset()
	kubeInf := informers.NewSharedInformerFactory(kube, 0)
	tjInf := tjinformers.NewSharedInformerFactory(tjfake.NewClientset(), 0)
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	tracker, err := cluster.New(cluster.Config{PodInformer: kubeInf.Core().V1().Pods(), NodeInformer: kubeInf.Core().V1().Nodes()})
	require.NoError(t, err)
	scaler := New(Config{
		KubeClient:            kube,
		Tracker:               tracker,
		JobInformer:           tjInf.Paddlepaddle().V1().TrainingJobs(),
		ReplicaSetInformer:    kubeInf.Apps().V1().ReplicaSets(),
		PriorityClassInformer: kubeInf.Scheduling().V1().PriorityClasses(),
		Recorder:              record.NewFakeRecorder(1),
		Logger:                logger,
		Clock:                 clocktesting.NewFakeClock(time.Now()),
		Interval:              time.Second,
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the informers never start: the caches never sync
	assert.NoError(t, scaler.Run(ctx))
}

// TestApplyTestsTheReplicaSetsUID: the patch tests the ReplicaSet's UID as
// well as its count, so that one deleted and created again between the plan
// and the patch, with the same count, is not scaled; a refused patch writes
// nothing else.
func TestApplyTestsTheReplicaSetsUID(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		// What the API server does when a JSON patch's test fails.
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "a-trainer", nil)
	})
	actions := f.scaler.RunOnce(context.Background())
	require.Len(t, actions, 1)
	for _, w := range f.writes() {
		p, ok := w.(clienttesting.PatchAction)
		require.True(t, ok)
		assert.Contains(t, string(p.GetPatch()), `"path":"/metadata/uid"`)
		assert.NotEqual(t, "status", p.GetSubresource(), "no status recorded for a patch that did not apply")
	}
}
