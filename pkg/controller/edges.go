package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// recordEdges records an event when the job enters a phase, becomes
// blocked, is suspended or resumed, meets a refusal its last status did not
// report, a master or pserver starts failing, or its training writes a
// progress report that cannot be read.
func (c *Controller) recordEdges(job *v1.TrainingJob, status v1.TrainingJobStatus, refused []refusal) {
	key := job.Namespace + "/" + job.Name
	if status.Phase != job.Status.Phase {
		switch status.Phase {
		case v1.PhaseRunning:
			c.recorder.Event(job, corev1.EventTypeNormal, v1.EventRunning, status.Message)
		case v1.PhaseSucceeded:
			c.log.Info("job succeeded", "job", key, "reason", status.Reason, "message", status.Message)
			c.recorder.Event(job, corev1.EventTypeNormal, v1.EventSucceeded, status.Message+"; every ReplicaSet is scaled to 0")
		case v1.PhaseFailed:
			c.log.Warn("job failed", "job", key, "reason", status.Reason, "message", status.Message)
			c.recorder.Event(job, corev1.EventTypeWarning, v1.EventFailed, status.Message)
		}
	}
	c.recordSuspension(job, status)
	if isTrue(status.Conditions, v1.ConditionBlocked) && !isTrue(job.Status.Conditions, v1.ConditionBlocked) {
		c.log.Warn("job blocked by a foreign object", "job", key, "message", status.Message)
		c.recorder.Event(job, corev1.EventTypeWarning, v1.EventBlocked, status.Message)
	}
	// A refusal is new when the job's last condition did not report it: a
	// retry that meets the same refusal writes nothing and records nothing.
	var reported string
	if last := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionChildrenAccepted); last != nil && last.Status == metav1.ConditionFalse {
		reported = last.Message
	}
	for _, r := range refused {
		if !strings.Contains(reported, r.line) {
			c.log.Warn("the API server refused an object of the job", "job", key, "reason", r.reason, "message", r.line)
			c.recorder.Event(job, corev1.EventTypeWarning, v1.EventRefused, r.line)
		}
	}
	if failing := meta.FindStatusCondition(status.Conditions, v1.ConditionRoleFailing); failing != nil && failing.Status == metav1.ConditionTrue &&
		!isTrue(job.Status.Conditions, v1.ConditionRoleFailing) {
		c.log.Warn("a master or pserver of the job is failing", "job", key, "reason", failing.Reason, "message", failing.Message)
		c.recorder.Event(job, corev1.EventTypeWarning, v1.EventRoleFailing, failing.Message)
	}
	if p := status.Progress; p != nil && p.Error != "" && (job.Status.Progress == nil || job.Status.Progress.Error != p.Error) {
		c.log.Warn("the training wrote a progress report that cannot be read", "job", key, "error", p.Error)
		c.recorder.Event(job, corev1.EventTypeWarning, v1.EventBadProgress, p.Error)
	}
}

func isTrue(conditions []metav1.Condition, kind string) bool {
	for _, c := range conditions {
		if c.Type == kind {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
