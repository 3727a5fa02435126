package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestRunOnceRecordsTheCoolDownOfEveryScaleDown: a scale-down records
// status.lastScaleDown at the plan's time, and the next plans read the
// cool-down from it — one that stops a trainer kube-scheduler bound and
// one that gives up a trainer no node took alike; a scale-up records none.
func TestRunOnceRecordsTheCoolDownOfEveryScaleDown(t *testing.T) {
	t.Run("a trainer that ran", func(t *testing.T) {
		f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: time.Second}, rebalanced()...)
		actions := f.scaler.RunOnce(context.Background())
		require.Len(t, actions, 2)
		giver := f.waitForJob("b", func(j *v1.TrainingJob) bool { return j.Status.LastScale != nil })
		require.NotNil(t, giver.Status.LastScaleDown, "b gave back 4 running trainers")
		assert.True(t, giver.Status.LastScaleDown.Time.Equal(f.clock.Now()), "at the plan's time")
		taker := f.waitForJob("a", func(j *v1.TrainingJob) bool { return j.Status.LastScale != nil })
		assert.Nil(t, taker.Status.LastScaleDown, "a scale-up starts no cool-down")
	})
	t.Run("a trainer no node took", func(t *testing.T) {
		earlier := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		// Two trainers fill the node of 2 CPU; the third waits, unschedulable.
		stuck := elasticJob("stuck", 1, 10, 3, func(j *v1.TrainingJob) { j.Status.LastScaleDown = &earlier })
		pending := stuck[len(stuck)-1].(*corev1.Pod)
		builders.Unbound()(pending)
		builders.Unschedulable("0/1 nodes are available: 1 Insufficient cpu.")(pending)
		f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: time.Second}, objects(stuck, []runtime.Object{node("n1", "2", "64Gi")})...)
		actions := f.scaler.RunOnce(context.Background())
		require.Len(t, actions, 1)
		assert.Equal(t, planner.ScaleAction{Job: "ns/stuck", From: 3, To: 2, Nodes: []string{""}},
			planner.ScaleAction{Job: actions[0].Job, From: actions[0].From, To: actions[0].To, Nodes: actions[0].Nodes}, "the trainer no node took goes")
		job := f.waitForJob("stuck", func(j *v1.TrainingJob) bool { return j.Status.LastScale != nil })
		assert.Equal(t, int32(2), job.Status.LastScale.To)
		require.NotNil(t, job.Status.LastScaleDown)
		assert.True(t, job.Status.LastScaleDown.Time.Equal(f.clock.Now()), "at the plan's time, not the earlier scale-down's")
	})
}
