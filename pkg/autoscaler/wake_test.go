package autoscaler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

const noRoom = "0/3 nodes are available: 3 Insufficient cpu."

func slim(p *corev1.Pod) *cluster.Pod {
	out, _ := cluster.PodOf(p)
	return out
}

func preemptNever(p *corev1.Pod) {
	never := corev1.PreemptNever
	p.Spec.PreemptionPolicy = &never
}

// TestWakesOnUpdate: the pod changes a plan acts on at once wake one; the
// lowest elastic job's priority is 100.
func TestWakesOnUpdate(t *testing.T) {
	pending := []builders.PodOption{builders.Unbound(), builders.Priority(1000)}
	waiting := append(pending[:len(pending):len(pending)], builders.Unschedulable(noRoom))
	for _, tc := range []struct {
		name     string
		old, pod *corev1.Pod
		want     bool
	}{
		{name: "a pod of a higher priority turns unschedulable",
			old: builders.Pod("web", pending...), pod: builders.Pod("web", waiting...), want: true},
		{name: "a new pod of a higher priority, not tried yet",
			pod: builders.Pod("web", pending...), want: true},
		{name: "a new pod of a lower priority, not tried yet",
			pod: builders.Pod("web", builders.Unbound(), builders.Priority(5))},
		{name: "a new pod that may not preempt, not tried yet",
			pod: builders.Pod("web", append(pending, preemptNever)...)},
		{name: "a pod first seen unschedulable",
			pod: builders.Pod("web", waiting...), want: true},
		{name: "a pod that stays unschedulable: the scheduler's next try",
			old: builders.Pod("web", waiting...), pod: builders.Pod("web", append(waiting, builders.PodRV("2"))...)},
		{name: "a pod of the trainers' priority turns unschedulable",
			old: builders.Pod("web", builders.Unbound(), builders.Priority(100)),
			pod: builders.Pod("web", builders.Unbound(), builders.Priority(100), builders.Unschedulable(noRoom))},
		{name: "a pod of a lower priority turns unschedulable",
			pod: builders.Pod("web", builders.Unbound(), builders.Priority(5), builders.Unschedulable(noRoom))},
		{name: "a pod that may not preempt turns unschedulable",
			pod: builders.Pod("web", append(waiting, preemptNever)...)},
		{name: "a TrainingJob's pod of the trainers' priority turns unschedulable",
			pod:  builders.Pod("b-pserver", builders.MemberOf("b", v1.RolePserver), builders.Unbound(), builders.Priority(100), builders.Unschedulable(noRoom)),
			want: true},
		{name: "a pod being deleted",
			pod: builders.Pod("web", append(waiting, builders.Terminating())...)},
		{name: "a bound pod finishes: its room frees",
			old: builders.Pod("batch", builders.OnNode("n-1")), pod: builders.Pod("batch", builders.OnNode("n-1"), builders.Phase(corev1.PodSucceeded)),
			want: true},
		{name: "a bound pod keeps running",
			old: builders.Pod("batch", builders.OnNode("n-1")), pod: builders.Pod("batch", builders.OnNode("n-1"), builders.PodRV("2"))},
		{name: "a pod is bound",
			old: builders.Pod("web", waiting...), pod: builders.Pod("web", builders.OnNode("n-1"), builders.Priority(1000))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old *cluster.Pod
			if tc.old != nil {
				old = slim(tc.old)
			}
			assert.Equal(t, tc.want, wakesOnUpdate(old, slim(tc.pod), 100))
		})
	}
}

// TestJobWakes: a TrainingJob turning Queued, or turning Running when it is
// elastic, wakes a plan; any other change of a job wakes none.
func TestJobWakes(t *testing.T) {
	job := func(phase v1.TrainingJobPhase, opts ...builders.JobOption) *v1.TrainingJob {
		return builders.Job("a", "ns", append(opts, builders.JobPhase(phase, "", ""))...)
	}
	for _, tc := range []struct {
		name string
		was  v1.TrainingJobPhase
		job  *v1.TrainingJob
		want bool
	}{
		{name: "a job first seen Queued: admission", job: job(v1.PhaseQueued), want: true},
		{name: "a job sent back to the queue", was: v1.PhaseCreating, job: job(v1.PhaseQueued), want: true},
		{name: "a queued job's position changes", was: v1.PhaseQueued, job: job(v1.PhaseQueued)},
		{name: "an elastic job turns Running: growth", was: v1.PhaseCreating, job: job(v1.PhaseRunning), want: true},
		{name: "a job first seen Running (a restart)", job: job(v1.PhaseRunning), want: true},
		{name: "a job of a fixed size turns Running", was: v1.PhaseCreating, job: job(v1.PhaseRunning, builders.Trainers(4, 4))},
		{name: "a running job's status is rewritten", was: v1.PhaseRunning, job: job(v1.PhaseRunning)},
		{name: "a job starts creating", was: v1.PhaseQueued, job: job(v1.PhaseCreating)},
		{name: "a job succeeds", was: v1.PhaseRunning, job: job(v1.PhaseSucceeded)},
		{name: "a job is new, before the controller's first status", job: job("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, jobWakes(tc.was, tc.job))
		})
	}
}

// TestEventsWakeOnePlanPerInterval runs the loop on a fake clock with the
// fake clientset's informers: a plan runs at once and every interval; an
// unschedulable pod of a higher priority, or a bound pod deleted, wakes one
// more a WakeDelay later, at most one per interval; a pod of a lower
// priority wakes none.
func TestEventsWakeOnePlanPerInterval(t *testing.T) {
	const interval, delay = 10 * time.Second, time.Second
	f := newActuatorFixture(t, Config{Interval: interval, WakeDelay: delay},
		builders.Pod("batch", builders.OnNode("n-1"), builders.Priority(0)))
	f.scaler.wake.planned([]planner.Job{{Key: "ns/a", Min: 1, Max: 4, Priority: 100}})
	var plans atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.scaler.loop(ctx, func(context.Context) { plans.Add(1) })
	}()
	defer func() { cancel(); <-done }()
	planned := func(n int32, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return plans.Load() == n }, 5*time.Second, time.Millisecond, what)
	}
	waiters := func(n int, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return f.clock.Waiters() == n }, 5*time.Second, time.Millisecond, what)
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		_, err := f.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	planned(1, "the first plan runs at once")
	waiters(1, "the ticker")
	create(builders.Pod("web-0", builders.Unbound(), builders.Priority(1000), builders.Unschedulable(noRoom)))
	waiters(2, "an unschedulable pod of a higher priority wakes a plan")
	f.clock.Step(delay - time.Millisecond)
	assert.Never(t, func() bool { return plans.Load() != 1 }, 50*time.Millisecond, time.Millisecond, "the plan waits out the delay")
	f.clock.Step(time.Millisecond)
	planned(2, "the woken plan runs after the delay")

	create(builders.Pod("web-1", builders.Unbound(), builders.Priority(1000), builders.Unschedulable(noRoom)))
	require.Eventually(t, func() bool { return f.scaler.wake.events.Load() == 2 && len(f.scaler.wake.kick) == 0 },
		5*time.Second, time.Millisecond, "the second pod's event")
	assert.Equal(t, 1, f.clock.Waiters(), "one woken plan per interval")
	f.clock.Step(interval - delay)
	planned(3, "the tick")

	create(builders.Pod("low", builders.Unbound(), builders.Priority(5), builders.Unschedulable(noRoom)))
	assert.Never(t, func() bool { return f.clock.Waiters() != 1 || f.scaler.wake.events.Load() != 2 }, 100*time.Millisecond, time.Millisecond,
		"a pod of a lower priority wakes nothing")

	create(builders.RolePod(builders.Job("a", "ns"), v1.RoleTrainer, "a-trainer-0", builders.OnNode("n-1")))
	store := f.kubeInf.Core().V1().Pods().Informer().GetStore()
	inCache := func() bool { _, ok, _ := store.GetByKey("ns/a-trainer-0"); return ok }
	require.Eventually(t, inCache, 5*time.Second, time.Millisecond, "the trainer in the cache")
	require.NoError(t, f.kube.CoreV1().Pods("ns").Delete(ctx, "a-trainer-0", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return !inCache() }, 5*time.Second, time.Millisecond, "the trainer gone from the cache")
	assert.Never(t, func() bool { return f.clock.Waiters() != 1 }, 100*time.Millisecond, time.Millisecond,
		"a trainer deleted (a plan's own scale-down or move) wakes nothing")

	require.NoError(t, f.kube.CoreV1().Pods("ns").Delete(ctx, "batch", metav1.DeleteOptions{}))
	waiters(2, "a bound pod of no job deleted frees room and wakes a plan")
	f.clock.Step(delay)
	planned(4, "the woken plan runs")

	f.clock.Step(interval - delay)
	planned(5, "the tick")
	queued := builders.Job("q", "ns", builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForAdmission, ""))
	_, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Create(ctx, queued, metav1.CreateOptions{})
	require.NoError(t, err)
	waiters(2, "a job submitted to the queue wakes a plan, which admits it")
	f.clock.Step(delay)
	planned(6, "the woken plan runs")
}
