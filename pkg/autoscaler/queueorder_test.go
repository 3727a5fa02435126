package autoscaler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestQueuedSinceIsWhenTheJobLastEnteredTheQueue: a job orders in the queue
// by when it last entered it, so one suspended or preempted long after its
// creation queues behind the jobs of its priority queued before that.
func TestQueuedSinceIsWhenTheJobLastEnteredTheQueue(t *testing.T) {
	created := builders.T0
	queuedAt := func(status metav1.ConditionStatus, at time.Time) builders.JobOption {
		return func(j *v1.TrainingJob) {
			j.CreationTimestamp = metav1.NewTime(created)
			j.Status.Conditions = []metav1.Condition{{Type: v1.ConditionQueued, Status: status, Reason: v1.ReasonWaitingForAdmission,
				LastTransitionTime: metav1.NewTime(at)}}
		}
	}
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name string
		job  *v1.TrainingJob
		want time.Time
	}{
		{"never queued: its creation", builders.Job("a", "ns", func(j *v1.TrainingJob) { j.CreationTimestamp = metav1.NewTime(created) }), created},
		{"queued at creation", builders.Job("a", "ns", queuedAt(metav1.ConditionTrue, created)), created},
		{"resumed or preempted a week later: then", builders.Job("a", "ns", queuedAt(metav1.ConditionTrue, created.Add(week))), created.Add(week)},
		{"admitted: its creation", builders.Job("a", "ns", queuedAt(metav1.ConditionFalse, created.Add(week))), created},
		{"a transition before creation (clock skew): its creation", builders.Job("a", "ns", queuedAt(metav1.ConditionTrue, created.Add(-time.Hour))), created},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, queuedSince(tc.job)) })
	}

	// In the plan's order, the job resumed after a later submission queues
	// behind it, though created first.
	resumed := planner.QueuedJob{Key: "ns/old", Created: queuedSince(builders.Job("old", "ns", queuedAt(metav1.ConditionTrue, created.Add(week))))}
	submitted := planner.QueuedJob{Key: "ns/new", Created: created.Add(time.Hour)}
	assert.True(t, submitted.Created.Before(resumed.Created), "the job submitted since goes first")
}
