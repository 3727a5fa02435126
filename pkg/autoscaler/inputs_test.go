package autoscaler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// TestArrivingJobsAreTheAdmittedOnesNotRunningYet: the autoscaler hands
// growth the elastic jobs admitted and not Running yet, with when they were
// admitted; not a queued, a Running, a suspended or an inelastic job.
func TestArrivingJobsAreTheAdmittedOnesNotRunningYet(t *testing.T) {
	created := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	admittedAt := created.Add(time.Minute)
	admit := func(objs []runtime.Object, phase v1.TrainingJobPhase, mut func(*v1.TrainingJob)) []runtime.Object {
		job := objs[0].(*v1.TrainingJob)
		job.Status.Phase = phase
		job.Status.Conditions = []metav1.Condition{{Type: v1.ConditionQueued, Status: metav1.ConditionFalse,
			Reason: v1.ReasonAdmitted, Message: "admitted", LastTransitionTime: metav1.NewTime(admittedAt)}}
		if mut != nil {
			mut(job)
		}
		return objs
	}
	objs := objects(
		admit(queuedJob("creating", 2, created), v1.PhaseCreating, nil),
		admit(queuedJob("running", 2, created), v1.PhaseRunning, nil),
		admit(queuedJob("suspended", 2, created), v1.PhaseCreating, func(j *v1.TrainingJob) { j.Spec.Suspend = true }),
		admit(queuedJob("inelastic", 2, created), v1.PhaseCreating, func(j *v1.TrainingJob) { j.Spec.Trainer.MaxInstance = 2 }),
		queuedJob("queued", 2, created),
		[]runtime.Object{node("n1", "64", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, GangAdmission: true}, objs...)
	queue, _, _ := f.scaler.queue(f.scaler.tracker.InquiryResource(), admittedAt)
	require.Len(t, queue.Arriving, 1)
	a := queue.Arriving[0]
	assert.Equal(t, "ns/creating", a.Key)
	assert.Equal(t, admittedAt, a.Admitted.UTC())
	assert.Equal(t, int32(2), a.Min)
	assert.Equal(t, int32(4), a.Max)
	assert.Equal(t, planner.Resources{CPUMilli: 1000, MemoryMega: 1024}, a.Request)
}

// TestRunningJobsCarryTheirMinimum: with preemption, the running jobs
// preemption may stop carry how many pods a Running job has bound at least
// (its minimum trainers and pservers), and 0 for a job not Running yet, so
// that a plan does not stop another job in the place of one whose pods the
// snapshot has not caught up with.
func TestRunningJobsCarryTheirMinimum(t *testing.T) {
	created := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	admitted := func(objs []runtime.Object, phase v1.TrainingJobPhase) []runtime.Object {
		job := objs[0].(*v1.TrainingJob)
		job.Status.Phase, job.Status.Conditions = phase, nil
		return objs
	}
	objs := objects(admitted(queuedJob("running", 3, created), v1.PhaseRunning), admitted(queuedJob("creating", 2, created), v1.PhaseCreating),
		queuedJob("queued", 2, created), []runtime.Object{node("n1", "64", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, GangAdmission: true, Preemption: true}, objs...)
	queue, _, _ := f.scaler.queue(f.scaler.tracker.InquiryResource(), created)
	minPods := map[string]int32{}
	for _, r := range queue.Running {
		minPods[r.Key] = r.MinPods
	}
	assert.Equal(t, map[string]int32{"ns/running": 3 + 1, "ns/creating": 0}, minPods)
}

// TestElasticJobsCoolDownFromLastScaleDown: the planner's cool-down starts
// at status.lastScaleDown; a lastScale that gave up only trainers no node
// took, with no lastScaleDown, starts none.
func TestElasticJobsCoolDownFromLastScaleDown(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC))
	gaveUp := &v1.ScaleRecord{Time: at, From: 3, To: 2, Reason: "scale down by 1 (1 not yet scheduled): …"}
	objs := objects(
		elasticJob("cooling", 1, 10, 2, func(j *v1.TrainingJob) { j.Status.LastScale, j.Status.LastScaleDown = gaveUp, &at }),
		elasticJob("free", 1, 10, 2, func(j *v1.TrainingJob) { j.Status.LastScale = gaveUp }),
		[]runtime.Object{node("n1", "64", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	jobs, _, _ := f.scaler.elasticJobs()
	last := map[string]time.Time{}
	for _, j := range jobs {
		last[j.Key] = j.LastScaleDown
	}
	assert.Equal(t, map[string]time.Time{"ns/cooling": at.Time, "ns/free": {}}, last)
}

// TestElasticJobsCarryTheirResizePrice: a PyTorch job's resizes are priced
// from its status (the last resize, its measured cost) and its spec's floor;
// a PaddlePaddle job's never are; and with PriceResizes off, none is.
func TestElasticJobsCarryTheirResizePrice(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC))
	torch := func(j *v1.TrainingJob) {
		j.Spec.Framework = v1.FrameworkPyTorch
		j.Spec.ElasticPolicy = &v1.ElasticPolicy{ResizeCooldownSeconds: ptr.To[int32](90)}
		j.Status.LastScale = &v1.ScaleRecord{Time: at, From: 1, To: 3}
		j.Status.Resize.LastCost = &metav1.Duration{Duration: 20 * time.Second}
	}
	objs := objects(elasticJob("torch", 1, 3, 3, torch), elasticJob("paddle", 1, 3, 3), []runtime.Object{node("n1", "64", "64Gi")})
	for _, priced := range []bool{true, false} {
		f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, PriceResizes: priced}, objs...)
		jobs, _, _ := f.scaler.elasticJobs()
		byKey := map[string]planner.Job{}
		for _, j := range jobs {
			byKey[j.Key] = j
		}
		require.Contains(t, byKey, "ns/torch")
		got := byKey["ns/torch"]
		if priced {
			assert.True(t, got.RestartsOnResize)
			assert.Equal(t, at.Time, got.LastResize)
			assert.Equal(t, 20*time.Second, got.ResizeCost)
			assert.Equal(t, 90*time.Second, got.MinResizeInterval)
		} else {
			assert.Equal(t, planner.Job{}, planner.Job{RestartsOnResize: got.RestartsOnResize, LastResize: got.LastResize, ResizeCost: got.ResizeCost, MinResizeInterval: got.MinResizeInterval}, "not priced")
		}
		assert.False(t, byKey["ns/paddle"].RestartsOnResize, "a PaddlePaddle job's resizes are free")
	}
}
