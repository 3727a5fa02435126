package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// TestAJobThatDoesNotStartInTimeGoesBackToTheQueue: an admitted job not
// Running a start deadline after its admission is queued again with the
// controller's reason for it, an event and a backoff; it is not in the
// queue until the backoff is over, and after the last retry it stays out.
// A job that ran since its admission, or is within the deadline, stays.
func TestAJobThatDoesNotStartInTimeGoesBackToTheQueue(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) // the fixture's clock
	admittedAt := now.Add(-11 * time.Minute)
	admit := func(objs []runtime.Object, at time.Time, ready *metav1.Condition) []runtime.Object {
		job := objs[0].(*v1.TrainingJob)
		job.Status.Phase, job.Status.Reason = v1.PhasePending, v1.ReasonUnschedulable
		job.Status.Message = `3 pods cannot be scheduled yet, e.g. stuck-trainer-0: persistentvolumeclaim "data" not found`
		job.Status.Conditions = []metav1.Condition{{Type: v1.ConditionQueued, Status: metav1.ConditionFalse,
			Reason: v1.ReasonAdmitted, Message: "admitted", LastTransitionTime: metav1.NewTime(at)}}
		if ready != nil {
			job.Status.Conditions = append(job.Status.Conditions, *ready)
		}
		return objs
	}
	ranOnce := &metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonUnschedulable,
		LastTransitionTime: metav1.NewTime(admittedAt.Add(time.Minute))} // it was Ready, and lost it
	objs := objects(
		admit(queuedJob("stuck", 2, admittedAt), admittedAt, nil),
		admit(queuedJob("ran", 2, admittedAt), admittedAt, ranOnce),
		admit(queuedJob("recent", 2, admittedAt), now.Add(-9*time.Minute), nil),
		[]runtime.Object{node("n1", "64", "64Gi")})
	rec := &fakeMetrics{}
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, GangAdmission: true,
		StartDeadline: 10 * time.Minute, StartRetries: 1, Metrics: rec}, objs...)
	ctx := context.Background()

	f.scaler.RunOnce(ctx)
	job, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(ctx, "stuck", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionQueued)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1.ReasonNotStarted, c.Reason)
	assert.Equal(t, "requeued (try 1 of 2): its minimum was not all running 10m0s after its admission at 2026-11-21T11:49:00Z "+
		`(Unschedulable: 3 pods cannot be scheduled yet, e.g. stuck-trainer-0: persistentvolumeclaim "data" not found); `+
		"admitted again no sooner than 2026-11-21T12:01:00Z", c.Message)
	assert.Equal(t, int32(1), job.Status.Requeues)
	require.NotNil(t, job.Status.RetryAfter)
	assert.Equal(t, now.Add(StartBackoff), job.Status.RetryAfter.UTC())
	assert.Equal(t, []bool{false}, rec.requeued)
	assert.Contains(t, <-f.recorder.Events, "Warning Requeued Requeued: requeued (try 1 of 2)")
	for _, name := range []string{"ran", "recent"} {
		j, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Zero(t, j.Status.Requeues, name)
		assert.False(t, meta.IsStatusConditionTrue(j.Status.Conditions, v1.ConditionQueued), "%s stays admitted", name)
	}

	// In the backoff, the job is not in the queue; after it, it is.
	f.waitForJob("stuck", func(j *v1.TrainingJob) bool { return j.Status.Requeues == 1 })
	queue, _, _ := f.scaler.queue(f.scaler.tracker.InquiryResource(), now.Add(30*time.Second))
	assert.Empty(t, queue.Jobs, "waiting out its backoff")
	queue, _, _ = f.scaler.queue(f.scaler.tracker.InquiryResource(), now.Add(StartBackoff))
	require.Len(t, queue.Jobs, 1)
	assert.Equal(t, "ns/stuck", queue.Jobs[0].Key)
	assert.Equal(t, now, queue.Jobs[0].Created.UTC(), "it queues from its requeue, behind the jobs queued before")

	// The last try: it stays queued, and out of the queue. (recent, past
	// its deadline by then too, goes back for its first time.)
	job.Status.Conditions = admit([]runtime.Object{job}, now, nil)[0].(*v1.TrainingJob).Status.Conditions
	_, err = f.tj.PaddlepaddleV1().TrainingJobs("ns").UpdateStatus(ctx, job, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.waitForJob("stuck", func(j *v1.TrainingJob) bool {
		return meta.IsStatusConditionFalse(j.Status.Conditions, v1.ConditionQueued)
	})
	f.clock.Step(11 * time.Minute)
	f.scaler.RunOnce(ctx)
	job, err = f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(ctx, "stuck", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), job.Status.Requeues)
	assert.Nil(t, job.Status.RetryAfter)
	assert.Contains(t, meta.FindStatusCondition(job.Status.Conditions, v1.ConditionQueued).Message,
		"requeued for the last time, after 2 tries: its minimum was not all running")
	assert.ElementsMatch(t, []bool{false, false, true}, rec.requeued)
	f.waitForJob("stuck", func(j *v1.TrainingJob) bool { return j.Status.Requeues == 2 })
	f.waitForJob("recent", func(j *v1.TrainingJob) bool { return j.Status.Requeues == 1 })
	queue, _, _ = f.scaler.queue(f.scaler.tracker.InquiryResource(), f.clock.Now().Add(24*time.Hour))
	require.Len(t, queue.Jobs, 1)
	assert.Equal(t, "ns/recent", queue.Jobs[0].Key, "stuck is not admitted again")
}

func TestBackoffDoublesToItsCap(t *testing.T) {
	assert.Equal(t, time.Minute, backoff(1))
	assert.Equal(t, 2*time.Minute, backoff(2))
	assert.Equal(t, 32*time.Minute, backoff(6))
	assert.Equal(t, MaxStartBackoff, backoff(7))
	assert.Equal(t, MaxStartBackoff, backoff(1000))
}

// TestStartDeadlineRunsFromTheEndOfTheAdmissionSecond: the API server keeps
// the Queued condition's time cut down to the second, so a job admitted at
// 12:00:00.9 reads as admitted at 12:00:00; the deadline runs from the end
// of that second, never from before the admission (the integration test of
// the start deadline saw a job requeued 7.96 s after its admission, with a
// deadline of 8 s).
func TestStartDeadlineRunsFromTheEndOfTheAdmissionSecond(t *testing.T) {
	stored := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := &Autoscaler{cfg: Config{StartDeadline: 8 * time.Second}}
	job := &v1.TrainingJob{Status: v1.TrainingJobStatus{Phase: v1.PhasePending}}
	c := &metav1.Condition{Type: v1.ConditionQueued, Status: metav1.ConditionFalse, Reason: v1.ReasonAdmitted,
		LastTransitionTime: metav1.NewTime(stored)}
	assert.False(t, a.pastStartDeadline(job, c, stored.Add(8500*time.Millisecond)), "7.6 s after an admission at 12:00:00.9")
	assert.False(t, a.pastStartDeadline(job, c, stored.Add(9*time.Second)), "8 s after the end of the second")
	assert.True(t, a.pastStartDeadline(job, c, stored.Add(9*time.Second+time.Millisecond)))
}
