package autoscaler

import (
	"context"
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

// TestWokenPlansKeepToTheMovesRate: a plan moves the rate's share of the
// time since the last plan, so that the plans events wake between two ticks
// do not add to -max_moves_per_second; the first plan, and any plan after a
// pause, an interval's.
func TestWokenPlansKeepToTheMovesRate(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: 2 * time.Second, MaxMovesPerSecond: 10})
	moves := func() int32 { return f.scaler.options(f.clock.Now()).MaxRebalancePerCycle }
	assert.EqualValues(t, 20, moves(), "the first plan: an interval's")
	f.scaler.RunOnce(context.Background())
	f.clock.Step(500 * time.Millisecond)
	assert.EqualValues(t, 5, moves(), "a plan woken half a second after the tick")
	f.scaler.RunOnce(context.Background())
	f.clock.Step(1500 * time.Millisecond)
	assert.EqualValues(t, 15, moves(), "the next tick: the rest of the interval")
	f.scaler.RunOnce(context.Background())
	assert.EqualValues(t, 1, moves(), "at once after a plan: one, never none")
	f.clock.Step(time.Minute)
	assert.EqualValues(t, 20, moves(), "after a pause, never more than an interval's")
}
