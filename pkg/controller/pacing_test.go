package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// withStatusInterval paces the status writes by interval on clk.
func withStatusInterval(interval time.Duration, clk *testingclock.FakeClock) func(*Config) {
	return func(c *Config) { c.StatusInterval, c.Clock = interval, clk }
}

// processQueue syncs every key the workqueue holds now, as a worker does,
// and feeds the writes back to the informers.
func (f *fixture) processQueue() {
	f.t.Helper()
	for f.c.queue.Len() > 0 {
		require.True(f.t, f.c.processNextItem(f.ctx))
		f.feedBack()
	}
}

// runningStatus is the status of a running job with the given counts.
func runningStatus(ready int32) v1.TrainingJobStatus {
	msg := fmt.Sprintf("%d trainers running (min 2, max 12), 1 pservers ready", ready)
	return v1.TrainingJobStatus{
		Phase: v1.PhaseRunning, Reason: v1.ReasonRunning, Message: msg, ObservedGeneration: 1,
		Conditions: []metav1.Condition{
			{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonRunning, Message: msg, ObservedGeneration: 1},
			{Type: v1.ConditionScaling, Status: metav1.ConditionTrue, Reason: "Grow", Message: "grows", ObservedGeneration: 1},
		},
		Pservers: v1.ReplicaStatus{Desired: 1, Current: 1, Ready: 1, Summary: "1/1"},
		Trainers: v1.ReplicaStatus{Desired: 10, Current: 10, Ready: ready, Summary: fmt.Sprintf("%d/10", ready)},
	}
}

func TestOnlyFiguresChanged(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*v1.TrainingJobStatus)
		want bool
	}{
		{name: "nothing changed", mut: func(*v1.TrainingJobStatus) {}, want: false},
		{name: "a trainer became ready", mut: func(s *v1.TrainingJobStatus) { *s = runningStatus(4) }, want: true},
		{name: "the autoscaler changed the desired count", mut: func(s *v1.TrainingJobStatus) {
			s.Trainers.Desired, s.Trainers.Summary = 12, "3/12"
		}, want: true},
		{name: "a pserver stopped", mut: func(s *v1.TrainingJobStatus) { s.Pservers.Current = 0 }, want: true},
		{name: "the phase changed", mut: func(s *v1.TrainingJobStatus) {
			s.Phase, s.Reason = v1.PhaseCreating, v1.ReasonPodsStarting
		}, want: false},
		{name: "the reason changed", mut: func(s *v1.TrainingJobStatus) { s.Reason = v1.ReasonUnschedulable }, want: false},
		{name: "a condition's status changed", mut: func(s *v1.TrainingJobStatus) {
			s.Conditions[0].Status = metav1.ConditionFalse
		}, want: false},
		{name: "a condition other than Ready changed its message", mut: func(s *v1.TrainingJobStatus) {
			s.Conditions[1].Message = "another message"
		}, want: false},
		{name: "a condition was added", mut: func(s *v1.TrainingJobStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: v1.ConditionRoleFailing, Status: metav1.ConditionTrue})
		}, want: false},
		{name: "a new generation was observed", mut: func(s *v1.TrainingJobStatus) { s.ObservedGeneration = 2 }, want: false},
		{name: "counts and phase changed together", mut: func(s *v1.TrainingJobStatus) {
			*s = runningStatus(4)
			s.Phase = v1.PhaseSucceeded
		}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := runningStatus(3)
			cur := runningStatus(3)
			tt.mut(&cur)
			before := old.DeepCopy()
			assert.Equal(t, tt.want, onlyFiguresChanged(&old, &cur))
			assert.Equal(t, before, &old, "onlyFiguresChanged does not mutate its input")
		})
	}
}

// burstJob is a Running job whose trainer ReplicaSet asks for 10 trainers,
// 2 of them ready and 8 pending, settled at the fake clock's time.
func burstJob(t *testing.T, f *fixture) []*corev1.Pod {
	t.Helper()
	job := builders.Job("mnist", testNamespace, builders.Trainers(2, 12))
	f.addJob(job)
	f.addJobObjects(job, 10)
	f.addPods(healthyPods(job, 0)...)
	var pending []*corev1.Pod
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("mnist-trainer-%d", i)
		if i < 2 {
			f.addPods(builders.RolePod(job, v1.RoleTrainer, name, builders.Ready()))
			continue
		}
		pending = append(pending, builders.RolePod(job, v1.RoleTrainer, name))
	}
	f.addPods(pending...)
	f.settle("mnist")
	require.Equal(t, v1.PhaseRunning, f.getJob("mnist").Status.Phase)
	require.Equal(t, int32(2), f.getJob("mnist").Status.Trainers.Ready)
	return pending
}

// TestStatusWritesOfABurstAreBounded: trainers that become ready one after
// the other cost one status write each without pacing, and one per interval
// with it; the last write holds the final counts either way.
func TestStatusWritesOfABurstAreBounded(t *testing.T) {
	tests := []struct {
		name            string
		interval        time.Duration
		wantDuringBurst int // status writes while 8 trainers become ready, 200 ms apart
		wantAfter       int // status writes once the interval has passed
	}{
		{name: "unpaced: one write per change", interval: 0, wantDuringBurst: 8, wantAfter: 8},
		{name: "paced by 5s: one write at the end of the interval", interval: 5 * time.Second, wantDuringBurst: 0, wantAfter: 1},
		{name: "paced by 1s: one write per second", interval: time.Second, wantDuringBurst: 1, wantAfter: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			f := newFixture(t, withStatusInterval(tt.interval, clk))
			pending := burstJob(t, f)
			key := testNamespace + "/mnist"

			for _, pod := range pending {
				clk.Step(200 * time.Millisecond)
				p := pod.DeepCopy()
				builders.Ready()(p)
				p.ResourceVersion = "2"
				f.addPods(p)
				f.c.queue.Add(key) // what the pod informer's handler does
				f.processQueue()
			}
			assert.Len(t, f.statusWrites(), tt.wantDuringBurst)
			assert.Zero(t, f.c.queue.Len(), "a deferred write waits in the workqueue's delay, not in the queue")

			clk.Step(tt.interval)
			if tt.interval > 0 {
				require.Eventually(t, func() bool { return f.c.queue.Len() > 0 }, 30*time.Second, 10*time.Millisecond,
					"the deferred sync comes back once the interval has passed")
			}
			f.processQueue()
			writes := f.statusWrites()
			assert.Len(t, writes, tt.wantAfter)
			require.NotEmpty(t, writes)
			last := writes[len(writes)-1].Status
			assert.Equal(t, v1.ReplicaStatus{Desired: 10, Current: 10, Ready: 10, Summary: "10/10"}, last.Trainers)
			assert.Equal(t, "10 trainers running (min 2, max 12), 1 pservers ready", last.Message)
			assert.Equal(t, last, f.getJob("mnist").Status, "the API server holds the final counts")

			f.reset()
			clk.Step(time.Hour)
			f.c.queue.Add(key)
			f.processQueue()
			assert.Empty(t, f.writeStrings(), "nothing is written once the counts are stored")
		})
	}
}

// TestPhaseChangesAreNotPaced: within the interval after a write, and with a
// count change waiting, a change of phase is written at once, with the
// counts of the moment and its event.
func TestPhaseChangesAreNotPaced(t *testing.T) {
	tests := []struct {
		name      string
		change    builders.PodOption // applied to a ready trainer
		wantPhase v1.TrainingJobPhase
		wantEvent string
	}{
		{name: "a trainer succeeded", change: builders.Exited(0), wantPhase: v1.PhaseSucceeded, wantEvent: "Normal Succeeded"},
		{name: "a trainer failed", change: builders.Exited(1), wantPhase: v1.PhaseFailed, wantEvent: "Warning Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			f := newFixture(t, withStatusInterval(time.Minute, clk))
			pending := burstJob(t, f)
			key := testNamespace + "/mnist"

			clk.Step(time.Second)
			p := pending[0].DeepCopy()
			builders.Ready()(p)
			p.ResourceVersion = "2"
			f.addPods(p)
			f.c.queue.Add(key)
			f.processQueue()
			require.Empty(t, f.statusWrites(), "a count change within the interval waits")

			clk.Step(time.Second)
			job := f.getJob("mnist")
			done := builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-0", builders.Ready(), tt.change, builders.PodRV("3"))
			f.addPods(done)
			f.c.queue.Add(key)
			require.NoError(t, f.c.sync(context.Background(), key))

			writes := f.statusWrites()
			require.Len(t, writes, 1, "the phase change is written by the sync that sees it")
			assert.Equal(t, tt.wantPhase, writes[0].Status.Phase)
			assert.Equal(t, int32(3), writes[0].Status.Trainers.Ready,
				"the write carries the counts of the moment, the waiting change's too")
			assert.Contains(t, eventPrefixes(f.events()), tt.wantEvent)
		})
	}
}

// TestPacerForgetsADeletedJob: the pacer keeps no entry for a job that is
// gone.
func TestPacerForgetsADeletedJob(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixture(t, withStatusInterval(time.Minute, clk))
	burstJob(t, f)
	require.Contains(t, f.c.pacer.last, testNamespace+"/mnist")

	require.NoError(t, f.jobIndexer().Delete(f.getJob("mnist")))
	require.NoError(t, f.sync("mnist"))
	assert.NotContains(t, f.c.pacer.last, testNamespace+"/mnist")
}
