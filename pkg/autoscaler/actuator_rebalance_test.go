package autoscaler

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// rebalanced is a node of 11 CPU that "b" fills with 10 trainers beside the
// one of "a": rebalancing moves 4 of b's to a, in one plan.
func rebalanced() []runtime.Object {
	return objects(elasticJob("a", 1, 10, 1), elasticJob("b", 1, 10, 10), []runtime.Object{node("n1", "11", "64Gi")})
}

// replicaSetPatches lists the names of the ReplicaSets patched, in order.
func replicaSetPatches(f *actuatorFixture) []string {
	var out []string
	for _, w := range f.writes() {
		if w.GetVerb() == "patch" && w.GetResource().Resource == "replicasets" {
			out = append(out, w.(clienttesting.PatchAction).GetName())
		}
	}
	return out
}

// TestRunOnceGivesBackBeforeItTakes: the taker's scale-up is applied after
// the giver's scale-down whose room it takes, whatever their keys' order.
func TestRunOnceGivesBackBeforeItTakes(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: time.Second}, rebalanced()...)
	actions := f.scaler.RunOnce(context.Background())
	require.Len(t, actions, 2)
	assert.Equal(t, planner.ScaleAction{Job: "ns/a", From: 1, To: 5, Cause: planner.CauseRebalance}, planner.ScaleAction{Job: actions[0].Job, From: actions[0].From, To: actions[0].To, Cause: actions[0].Cause})
	assert.Equal(t, planner.ScaleAction{Job: "ns/b", From: 10, To: 6, Cause: planner.CauseRebalance}, planner.ScaleAction{Job: actions[1].Job, From: actions[1].From, To: actions[1].To, Cause: actions[1].Cause})
	assert.Equal(t, []string{"b-trainer", "a-trainer"}, replicaSetPatches(f))
}

// TestRunOnceTakesNothingWhenTheGiverFails: a taker whose room was to come
// from a scale-down that failed is not scaled up: its pods would only wait.
func TestRunOnceTakesNothingWhenTheGiverFails(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: time.Second}, rebalanced()...)
	f.kube.PrependReactor("patch", "replicasets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchAction).GetName() != "b-trainer" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "b-trainer", nil)
	})
	require.Len(t, f.scaler.RunOnce(context.Background()), 2, "both planned")
	assert.Equal(t, []string{"b-trainer"}, replicaSetPatches(f), "a's scale-up is not applied")
	assert.Empty(t, drain(f.recorder), "and neither is recorded")
}

// TestWokenPlansKeepToTheMovesRate: the moves a plan makes come out of the
// budget -max_moves_per_second fills, so that the plans events wake between
// two ticks do not add to the rate; what a plan leaves unmoved is the next
// plan's.
func TestWokenPlansKeepToTheMovesRate(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: 2 * time.Second, MaxMovesPerSecond: 1}, rebalanced()...)
	moves := func() int32 { return f.scaler.options(f.clock.Now()).MaxRebalancePerCycle }
	assert.EqualValues(t, 2, moves(), "the first plan: an interval's")
	actions := f.scaler.RunOnce(context.Background())
	require.Len(t, actions, 2)
	assert.Equal(t, []int32{3, 8}, []int32{actions[0].To, actions[1].To}, "a takes 2 of b's trainers, the budget's")
	f.clock.Step(time.Second)
	assert.EqualValues(t, 1, moves(), "a plan woken a second later: the second's")

	idle := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: 2 * time.Second, MaxMovesPerSecond: 1}, node("n1", "11", "64Gi"))
	require.Empty(t, idle.scaler.RunOnce(context.Background()))
	idle.clock.Step(time.Second)
	assert.EqualValues(t, 2, idle.scaler.options(idle.clock.Now()).MaxRebalancePerCycle,
		"a plan that moved nothing leaves its budget to the next, up to an interval's")
}

// TestMoveBudget: the budget fills at the rate up to an interval's, each
// plan's moves empty it, and a plan may always move one; over any stretch
// of time, plans at least a move's time apart move no more than the rate's
// share of it plus an interval's.
func TestMoveBudget(t *testing.T) {
	const interval, rate = 2 * time.Second, 10.0
	var b moveBudget
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	assert.EqualValues(t, 20, b.allowance(t0, interval, rate), "the first plan: an interval's")
	b.spend(t0, interval, rate, 20)
	assert.EqualValues(t, 5, b.allowance(at(500*time.Millisecond), interval, rate), "half a second later")
	b.spend(at(500*time.Millisecond), interval, rate, 0)
	assert.EqualValues(t, 20, b.allowance(at(2*time.Second), interval, rate), "the tick: its own and the woken plan's unmoved 5")
	b.spend(at(2*time.Second), interval, rate, 20)
	assert.EqualValues(t, 1, b.allowance(at(2*time.Second), interval, rate), "at once after a plan: one, never none")
	b.spend(at(2*time.Second), interval, rate, 3)
	assert.EqualValues(t, 1, b.allowance(at(2*time.Second+50*time.Millisecond), interval, rate), "overspent: no debt, one")
	assert.EqualValues(t, 20, b.allowance(at(time.Minute), interval, rate), "after a pause, never more than an interval's")
	assert.EqualValues(t, planner.MovesPerCycle(interval, 0), new(moveBudget).allowance(t0, interval, 0), "the default rate")

	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var b moveBudget
		var times []time.Duration
		var moved []int32
		now := time.Duration(0)
		for range 50 {
			now += time.Duration(1+rng.IntN(30)) * 100 * time.Millisecond // a move's time (0.1 s) apart at least
			allowed := b.allowance(at(now), interval, rate)
			m := int32(rng.IntN(int(allowed) + 1))
			if rng.IntN(3) == 0 {
				m = allowed
			}
			b.spend(at(now), interval, rate, m)
			times, moved = append(times, now), append(moved, m)
		}
		for i := range times {
			sum := int32(0)
			for k := i; k < len(times); k++ {
				sum += moved[k]
				bound := rate*(times[k]-times[i]).Seconds() + rate*interval.Seconds()
				require.LessOrEqual(t, float64(sum), bound+1e-9, "plans %d..%d at %v..%v", i, k, times[i], times[k])
			}
		}
	}
}
