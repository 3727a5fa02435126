package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// startingJob is a job that is not Running yet, with room to grow into: a
// plan grows it only once it runs.
func startingJob(phase v1.TrainingJobPhase) []runtime.Object {
	return objects(elasticJob("a", 1, 4, 1, func(j *v1.TrainingJob) { j.Status.Phase = phase }),
		[]runtime.Object{node("n1", "10", "64Gi")})
}

// runLoop starts the fixture's Run and waits for its first cycle (which
// plans nothing for a job that is not Running).
func runLoop(t *testing.T, f *actuatorFixture) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, f.scaler.Run(ctx))
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, f.clock.HasWaiters, 5*time.Second, time.Millisecond, "the first cycle never ended")
	require.Empty(t, replicaSetPatches(f))
}

// setPhase writes the job's phase, as the controller would.
func setPhase(t *testing.T, f *actuatorFixture, phase v1.TrainingJobPhase) {
	job, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(context.Background(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	job.Status.Phase = phase
	_, err = f.tj.PaddlepaddleV1().TrainingJobs("ns").UpdateStatus(context.Background(), job, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// seen waits until the autoscaler's informer has the job in phase.
func seen(t *testing.T, f *actuatorFixture, phase v1.TrainingJobPhase) {
	require.Eventually(t, func() bool {
		j, err := f.scaler.jobs.TrainingJobs("ns").Get("a")
		return err == nil && j.Status.Phase == phase
	}, 5*time.Second, time.Millisecond)
}

// TestAJobStartingRunningGetsACycleSoon: a job that starts Running is
// planned for a quarter of the interval later, not at the next tick; not
// before that quarter, which lets the tracker read its pods.
func TestAJobStartingRunningGetsACycleSoon(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Hour}, startingJob(v1.PhaseCreating)...)
	runLoop(t, f)
	// Long after the last cycle, still a quarter of the interval from the
	// job's change.
	f.clock.Step(time.Hour / 2)
	setPhase(t, f, v1.PhaseRunning)
	seen(t, f, v1.PhaseRunning)
	time.Sleep(100 * time.Millisecond)
	assert.Empty(t, replicaSetPatches(f), "no cycle before a quarter of the interval")
	f.clock.Step(time.Hour / KickGap)
	require.Eventually(t, func() bool { return len(replicaSetPatches(f)) == 1 }, 5*time.Second, time.Millisecond,
		"the job that started Running was not grown before the next tick")
}

// TestOtherJobChangesAskForNoCycle: a change that is not a job entering the
// queue or starting Running waits for the tick.
func TestOtherJobChangesAskForNoCycle(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Hour}, startingJob(v1.PhasePending)...)
	runLoop(t, f)
	setPhase(t, f, v1.PhaseCreating)
	seen(t, f, v1.PhaseCreating)
	f.clock.Step(time.Hour / KickGap)
	time.Sleep(100 * time.Millisecond)
	assert.Empty(t, f.scaler.kicked, "a job that is created asks for no cycle")
	assert.Empty(t, replicaSetPatches(f))
}

// TestWhichPhasesAskForACycle: entering the queue and starting Running do,
// once; nothing else does, and a burst is one request.
func TestWhichPhasesAskForACycle(t *testing.T) {
	a := &Autoscaler{kicked: make(chan struct{}, 1)}
	job := func(phase v1.TrainingJobPhase) *v1.TrainingJob {
		return &v1.TrainingJob{Status: v1.TrainingJobStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		from, to v1.TrainingJobPhase
		kicks    bool
	}{
		{v1.PhasePending, v1.PhaseQueued, true},
		{v1.PhaseCreating, v1.PhaseRunning, true},
		{v1.PhaseQueued, v1.PhaseCreating, false},
		{v1.PhaseRunning, v1.PhaseRunning, false},
		{v1.PhaseRunning, v1.PhaseSucceeded, false},
	} {
		a.onJobUpdate(job(tc.from), job(tc.to))
		assert.Equal(t, tc.kicks, len(a.kicked) == 1, "%s → %s", tc.from, tc.to)
		if len(a.kicked) == 1 {
			<-a.kicked
		}
	}
	a.onJobUpdate(job(v1.PhaseCreating), job(v1.PhaseRunning))
	a.onJobUpdate(job(v1.PhasePending), job(v1.PhaseQueued))
	assert.Len(t, a.kicked, 1, "two requests before a cycle are one")
}
