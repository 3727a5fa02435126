package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func job(ns, name string, created time.Time, phase v1.TrainingJobPhase, queued metav1.ConditionStatus, reason, message string) v1.TrainingJob {
	tj := v1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}}
	tj.Spec.Trainer.MinInstance, tj.Spec.Trainer.MaxInstance = 2, 6
	tj.Status.Phase = phase
	if queued != "" {
		tj.Status.Conditions = []metav1.Condition{{Type: v1.ConditionQueued, Status: queued, Reason: reason, Message: message}}
	}
	return tj
}

// TestQueueOfListsTheWaitingJobsInQueueOrder: only jobs whose Queued
// condition is True and that have not finished, by their position (jobs
// not placed yet last, oldest first), with the cause without the position.
func TestQueueOfListsTheWaitingJobsInQueueOrder(t *testing.T) {
	jobs := []v1.TrainingJob{
		job("a", "second", now.Add(-time.Hour), v1.PhaseQueued, metav1.ConditionTrue, "WaitingForAdmission",
			"position 2 of 2 in the queue: its minimum, 1 pserver, 3 trainers, needs 7 CPU"),
		job("b", "running", now.Add(-time.Hour), v1.PhaseRunning, metav1.ConditionFalse, "Admitted", "admitted: ..."),
		job("a", "new", now.Add(-time.Second), v1.PhaseQueued, metav1.ConditionTrue, "WaitingForAdmission", "waiting for the autoscaler"),
		job("b", "first", now.Add(-2*time.Minute), v1.PhaseQueued, metav1.ConditionTrue, "WaitingForQuota",
			"position 1 of 2 in the queue: the ResourceQuota of namespace b leaves 1 CPU"),
		job("b", "done", now.Add(-time.Hour), v1.PhaseFailed, metav1.ConditionTrue, "WaitingForAdmission", "position 9 of 9 in the queue: x"),
		job("b", "plain", now, v1.PhaseCreating, "", "", ""),
	}
	q := queueOf(jobs, now)
	require.Len(t, q.Jobs, 3)
	assert.Equal(t, []string{"first", "second", "new"}, []string{q.Jobs[0].Name, q.Jobs[1].Name, q.Jobs[2].Name})
	assert.Equal(t, QueuedJob{Namespace: "b", Name: "first", Position: 1, Of: 2, Created: metav1.NewTime(now.Add(-2 * time.Minute)),
		WaitingSeconds: 120, Reason: "WaitingForQuota", Cause: "the ResourceQuota of namespace b leaves 1 CPU", MinTrainers: 2, MaxTrainers: 6}, q.Jobs[0])
	assert.Equal(t, 0, q.Jobs[2].Position)
	assert.Equal(t, "waiting for the autoscaler", q.Jobs[2].Cause)

	var table bytes.Buffer
	require.NoError(t, printQueue(&table, &bytes.Buffer{}, q, "", ""))
	assert.Equal(t, `NAMESPACE   NAME     POSITION   WAITING   REASON                CAUSE
b           first    1/2        2m        WaitingForQuota       the ResourceQuota of namespace b leaves 1 CPU
a           second   2/2        60m       WaitingForAdmission   its minimum, 1 pserver, 3 trainers, needs 7 CPU
a           new      -          1s        WaitingForAdmission   waiting for the autoscaler
`, table.String())

	var wide bytes.Buffer
	require.NoError(t, printQueue(&wide, &bytes.Buffer{}, Queue{Jobs: q.Jobs[:1]}, "wide", "b"))
	assert.Equal(t, `NAME    POSITION   WAITING   REASON            PRIORITY CLASS   TRAINERS   CAUSE
first   1/2        2m        WaitingForQuota   <none>           2..6       the ResourceQuota of namespace b leaves 1 CPU
`, wide.String())

	var js bytes.Buffer
	require.NoError(t, printQueue(&js, &bytes.Buffer{}, q, "json", ""))
	var back Queue
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, len(q.Jobs), len(back.Jobs))
	assert.Equal(t, "WaitingForQuota", back.Jobs[0].Reason)

	var out, errOut bytes.Buffer
	require.NoError(t, printQueue(&out, &errOut, queueOf(nil, now), "", "team"))
	assert.Empty(t, out.String())
	assert.Equal(t, "No TrainingJobs wait for admission in namespace team.\n", errOut.String())
	require.NoError(t, printQueue(&out, &errOut, queueOf(nil, now), "json", "team"))
	assert.JSONEq(t, `{"jobs":[]}`, out.String(), "an empty queue is an empty list")
}
