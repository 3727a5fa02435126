package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
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

// TestQueueCarriesThePlannersReasons: every reason the autoscaler writes in
// a waiting job's Queued condition reaches the table and the JSON with its
// cause; a job preempted but not placed again yet is listed without a
// position; a suspended job has left the queue.
func TestQueueCarriesThePlannersReasons(t *testing.T) {
	reasons := []struct{ reason, cause string }{
		{v1.ReasonWaitingForAdmission, "its minimum, 1 pserver, 3 trainers, needs 7 CPU; the free room holds 4 CPU"},
		{v1.ReasonWaitingForQuota, "namespace a quota requests.cpu: 6 CPU left, the minimum needs 14 CPU"},
		{v1.ReasonExceedsQuota, "its minimum, 1 pserver, 3 trainers, needs 7 CPU of namespace a's quota requests.cpu, above its hard limit of 6 CPU: it cannot start until the quota is raised"},
		{v1.ReasonUnplaceable, "its minimum, 1 pserver, 3 trainers, needs 16 CPU; the nodes its pods may use could not hold them all even empty"},
		{v1.ReasonReservedForHead, "its minimum, 1 pserver, 1 trainer, needs 2 CPU and would fit, but only on nodes kept for a/job-0, ahead in the queue"},
		{v1.ReasonPreempted, "its minimum, 1 pserver, 1 trainer, needs 2 CPU; the free room holds 1 CPU"},
	}
	var jobs []v1.TrainingJob
	for i, r := range reasons {
		jobs = append(jobs, job("a", fmt.Sprintf("job-%d", i), now.Add(-time.Hour), v1.PhaseQueued, metav1.ConditionTrue, r.reason,
			fmt.Sprintf("position %d of %d in the queue: %s", i+1, len(reasons), r.cause)))
	}
	jobs = append(jobs, job("a", "just-preempted", now.Add(-time.Minute), v1.PhaseRunning, metav1.ConditionTrue, v1.ReasonPreempted,
		"preempted by a/urgent (priority 1000): waits in the queue to start again"))
	suspended := job("a", "suspended", now.Add(-time.Minute), v1.PhaseQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission,
		"position 1 of 1 in the queue: its minimum ...")
	suspended.Spec.Suspend = true
	jobs = append(jobs, suspended)

	q := queueOf(jobs, now)
	require.Len(t, q.Jobs, len(reasons)+1, "the suspended job is not in the queue")
	for i, r := range reasons {
		assert.Equal(t, r.reason, q.Jobs[i].Reason)
		assert.Equal(t, r.cause, q.Jobs[i].Cause)
		assert.Equal(t, i+1, q.Jobs[i].Position)
	}
	last := q.Jobs[len(reasons)]
	assert.Equal(t, "just-preempted", last.Name)
	assert.Equal(t, v1.ReasonPreempted, last.Reason)
	assert.Equal(t, 0, last.Position)

	var table bytes.Buffer
	require.NoError(t, printQueue(&table, &bytes.Buffer{}, q, "", "a"))
	lines := strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n")
	require.Len(t, lines, len(q.Jobs)+1, table.String())
	for i, j := range q.Jobs {
		assert.Regexp(t, "^"+j.Name+`\s+\S+\s+\S+\s+`+j.Reason+`\s+`+regexp.QuoteMeta(j.Cause)+"$", lines[i+1])
	}
	assert.Regexp(t, `^just-preempted\s+-\s`, lines[len(lines)-1])

	var js bytes.Buffer
	require.NoError(t, printQueue(&js, &bytes.Buffer{}, q, "json", "a"))
	var back Queue
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Len(t, back.Jobs, len(q.Jobs))
	for i, j := range q.Jobs {
		assert.Equal(t, j.Reason, back.Jobs[i].Reason)
		assert.Equal(t, j.Cause, back.Jobs[i].Cause)
	}
}
