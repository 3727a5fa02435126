package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// replicas returns the spec.replicas of the job's ReplicaSets by name.
func (f *fixture) replicas(job *v1.TrainingJob) map[string]int32 {
	f.t.Helper()
	out := map[string]int32{}
	for _, role := range roles(job) {
		name := v1.ReplicaSetName(job.Name, role)
		out[name] = *f.getReplicaSet(name).Spec.Replicas
	}
	return out
}

func hasEvent(events []string, reason string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

func TestSyncSuspendsARunningJob(t *testing.T) {
	for _, gang := range []bool{true, false} {
		f := newFixture(t, withGang(gang))
		job := builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseRunning, v1.ReasonRunning, "running"))
		if gang {
			builders.Condition(v1.ConditionQueued, metav1.ConditionFalse, v1.ReasonAdmitted)(job)
		}
		job = f.addJob(job)
		f.addJobObjects(job, 4)
		f.addPods(healthyPods(job, 4)...)
		f.settle("mnist")

		job = f.getJob("mnist")
		job.Spec.Suspend = true
		f.updateJob(job)
		events := f.settle("mnist")

		assert.Equal(t, map[string]int32{"mnist-pserver": 0, "mnist-trainer": 0}, f.replicas(job), "gang %v", gang)
		status := f.getJob("mnist").Status
		assert.Equal(t, v1.PhaseSuspended, status.Phase)
		assert.Equal(t, v1.ReasonSuspended, status.Reason)
		assert.Contains(t, status.Message, "pods still terminating", "the pods are not gone yet")
		c := condition(status, v1.ConditionSuspended)
		require.NotNil(t, c)
		assert.Equal(t, metav1.ConditionTrue, c.Status)
		assert.True(t, hasEvent(events, v1.EventSuspended), "%v", events)
		if gang {
			assert.Equal(t, metav1.ConditionFalse, condition(status, v1.ConditionQueued).Status, "an admitted job is not queued")
		}
	}
}

func TestSyncResumesASuspendedJobThroughTheQueue(t *testing.T) {
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.Suspended(true)))
	f.settle("mnist")
	assert.Equal(t, map[string]int32{"mnist-pserver": 0, "mnist-trainer": 0}, f.replicas(job), "created suspended: no pods")
	assert.Equal(t, v1.PhaseSuspended, f.getJob("mnist").Status.Phase)
	assert.Nil(t, condition(f.getJob("mnist").Status, v1.ConditionQueued), "a suspended job is not queued")

	job = f.getJob("mnist")
	job.Spec.Suspend = false
	f.updateJob(job)
	events := f.settle("mnist")

	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseQueued, status.Phase)
	q := condition(status, v1.ConditionQueued)
	require.NotNil(t, q)
	assert.Equal(t, metav1.ConditionTrue, q.Status)
	s := condition(status, v1.ConditionSuspended)
	require.NotNil(t, s)
	assert.Equal(t, metav1.ConditionFalse, s.Status)
	assert.Equal(t, v1.ReasonResumed, s.Reason)
	assert.True(t, hasEvent(events, v1.EventResumed), "%v", events)
	assert.Equal(t, map[string]int32{"mnist-pserver": 0, "mnist-trainer": 0}, f.replicas(job), "queued: still no pods")
	assert.True(t, templateGated(f.getReplicaSet("mnist-trainer")))

	// Admitted, it starts whole.
	job = f.getJob("mnist")
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == v1.ConditionQueued {
			job.Status.Conditions[i].Status, job.Status.Conditions[i].Reason = metav1.ConditionFalse, v1.ReasonAdmitted
		}
	}
	f.updateJob(job)
	f.settle("mnist")
	assert.Equal(t, map[string]int32{"mnist-pserver": 1, "mnist-trainer": 2}, f.replicas(job))
	assert.False(t, templateGated(f.getReplicaSet("mnist-trainer")))
}

func TestSyncResumesASuspendedJobAtOnceWithoutGangAdmission(t *testing.T) {
	f := newFixture(t)
	f.addJob(builders.Job("mnist", testNamespace, builders.Suspended(true)))
	f.settle("mnist")
	job := f.getJob("mnist")
	job.Spec.Suspend = false
	f.updateJob(job)
	f.settle("mnist")
	assert.Equal(t, map[string]int32{"mnist-pserver": 1, "mnist-trainer": 2}, f.replicas(job))
	assert.Equal(t, v1.ReasonResumed, condition(f.getJob("mnist").Status, v1.ConditionSuspended).Reason)
	assert.Nil(t, condition(f.getJob("mnist").Status, v1.ConditionQueued))
}

func TestSyncTakesASuspendedJobOutOfTheQueue(t *testing.T) {
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForAdmission, "x"),
		builders.Condition(v1.ConditionQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission), builders.Suspended(true)))
	f.addGatedJobObjects(job)
	f.settle("mnist")
	q := condition(f.getJob("mnist").Status, v1.ConditionQueued)
	require.NotNil(t, q)
	assert.Equal(t, metav1.ConditionFalse, q.Status)
	assert.Equal(t, v1.ReasonSuspended, q.Reason)
	assert.Equal(t, v1.PhaseSuspended, f.getJob("mnist").Status.Phase)
}

func TestSyncHoldsAPreemptedJobAtZero(t *testing.T) {
	// The autoscaler preempts a job by queueing it again.
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseRunning, v1.ReasonRunning, "running"),
		builders.Condition(v1.ConditionQueued, metav1.ConditionTrue, v1.ReasonPreempted),
		builders.Condition(v1.ConditionPreempted, metav1.ConditionTrue, v1.ReasonPreempted)))
	f.addJobObjects(job, 4)
	f.addPods(healthyPods(job, 4)...)
	f.settle("mnist")
	assert.Equal(t, map[string]int32{"mnist-pserver": 0, "mnist-trainer": 0}, f.replicas(job))
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseQueued, status.Phase)
	assert.Equal(t, v1.ReasonPreempted, status.Reason, "the phase says why it waits")
	assert.Equal(t, metav1.ConditionTrue, condition(status, v1.ConditionPreempted).Status, "the autoscaler's condition is kept")
}

func TestSyncLeavesAFinishedJobAloneWhenSuspended(t *testing.T) {
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseSucceeded, v1.ReasonSucceeded, "done"), builders.Suspended(true)))
	f.addJobObjects(job, 2)
	for _, name := range []string{"mnist-pserver", "mnist-trainer"} {
		rs := f.getReplicaSet(name)
		rs.Spec.Replicas = new(int32)
		f.updateReplicaSet(rs)
	}
	f.settle("mnist")
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseSucceeded, status.Phase)
	assert.Nil(t, condition(status, v1.ConditionSuspended))
}
