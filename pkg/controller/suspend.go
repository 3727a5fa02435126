package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// spec.suspend stops a job without deleting it: every ReplicaSet is scaled
// to 0 and the phase is Suspended (the condition Suspended says since
// when). Cleared, the job goes back to the admission queue ([isQueued], [Controller.ensureUngated]),
// or, without gang admission, starts at once.

// The reasons a job runs no pod: every ReplicaSet is scaled to 0.
const (
	stopFinished  = "the job finished"
	stopSuspended = "the job is suspended"
	stopQueued    = "the job waits in the admission queue"
)

// stopReason says why the job must run no pod, "" when it may run: it
// finished, spec.suspend holds it, or it waits for admission. A queued job
// holds no pod, so that it holds no quota and no node while it waits: its
// ReplicaSets exist at 0 replicas, and admission scales them up.
func stopReason(job *v1.TrainingJob, final, queued bool) string {
	switch {
	case final:
		return stopFinished
	case job.Spec.Suspend:
		return stopSuspended
	case queued:
		return stopQueued
	}
	return ""
}

// suspendedVerdict is the phase of a job spec.suspend holds.
func suspendedVerdict(obs observed, roles []v1.Role) verdict {
	msg := "spec.suspend is true: every ReplicaSet is scaled to 0"
	if n := countAll(obs, roles, func(p *cluster.Pod) bool {
		return p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed
	}); n > 0 {
		msg += fmt.Sprintf("; %d pods still terminating", n)
	}
	return verdict{v1.PhaseSuspended, v1.ReasonSuspended, msg}
}

// countAll counts the job's pods of every role that pred holds for.
func countAll(obs observed, roles []v1.Role, pred func(*cluster.Pod) bool) int32 {
	var n int32
	for _, role := range roles {
		n += countPods(obs.pods[role], pred)
	}
	return n
}

// setSuspended keeps the Suspended condition: True while spec.suspend holds
// the job; once it was set, False when spec.suspend is cleared. A finished
// job is never suspended.
func setSuspended(status *v1.TrainingJobStatus, job *v1.TrainingJob, final bool) {
	c := meta.FindStatusCondition(status.Conditions, v1.ConditionSuspended)
	switch {
	case job.Spec.Suspend && !final && (c == nil || c.Status != metav1.ConditionTrue):
		setCondition(status, job.Generation, v1.ConditionSuspended, true, v1.ReasonSuspended,
			"spec.suspend is true: every ReplicaSet is scaled to 0")
	case !job.Spec.Suspend && c != nil && c.Status == metav1.ConditionTrue:
		setCondition(status, job.Generation, v1.ConditionSuspended, false, v1.ReasonResumed,
			"spec.suspend was cleared: the job starts whole once admitted")
	}
}

// suspendedCondition returns the status's Suspended condition, or an empty
// one.
func suspendedCondition(status v1.TrainingJobStatus) metav1.Condition {
	if c := meta.FindStatusCondition(status.Conditions, v1.ConditionSuspended); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// recordSuspension records the edges of spec.suspend: the job was suspended,
// or resumed.
func (c *Controller) recordSuspension(job *v1.TrainingJob, status v1.TrainingJobStatus) {
	key := job.Namespace + "/" + job.Name
	switch was, is := isTrue(job.Status.Conditions, v1.ConditionSuspended), isTrue(status.Conditions, v1.ConditionSuspended); {
	case is && !was:
		c.log.Info("job suspended", "job", key)
		c.recorder.Event(job, corev1.EventTypeNormal, v1.EventSuspended, status.Message)
	case was && !is:
		c.log.Info("job resumed", "job", key)
		c.recorder.Event(job, corev1.EventTypeNormal, v1.EventResumed, suspendedCondition(status).Message)
	}
}
