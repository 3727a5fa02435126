package autoscaler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// recordQueue records the plan's preemptions, admissions and the queue's
// positions in the jobs' status; the controller scales an admitted job up
// and a preempted one down. A preemption is written before the admission it
// makes room for, and a job whose preemptions were not all written is not
// admitted: the next plan decides again. A failed write is retried by the
// next plan.
func (a *Autoscaler) recordQueue(ctx context.Context, d planner.Decision, objects map[string]*v1.TrainingJob, now time.Time) {
	if a.cfg.DryRun {
		for _, pre := range d.Preempted {
			a.log.Info("dry run: would preempt job", "job", pre.Job, "for", pre.By, "reason", pre.Reason)
		}
		for _, adm := range d.Admitted {
			a.log.Info("dry run: would admit job", "job", adm.Job, "reason", adm.Reason)
		}
		return
	}
	blocked := map[string]bool{}
	for _, pre := range d.Preempted {
		tj := objects[pre.Job]
		if tj == nil {
			blocked[pre.By] = true
			continue
		}
		queued := metav1.Condition{Type: v1.ConditionQueued, Status: metav1.ConditionTrue, Reason: v1.ReasonPreempted,
			Message: fmt.Sprintf("preempted by %s (priority %d): waits in the queue to start again", pre.By, pre.ByPriority)}
		preempted := metav1.Condition{Type: v1.ConditionPreempted, Status: metav1.ConditionTrue, Reason: v1.ReasonPreempted,
			Message: fmt.Sprintf("stopped whole for %s of priority %d, above its %d: %s", pre.By, pre.ByPriority, pre.Priority, pre.Reason)}
		if err := a.writeQueued(ctx, tj, "", queued, preempted); err != nil {
			blocked[pre.By] = true
			a.log.Warn("preempting the job failed; the next plan retries", "job", pre.Job, "for", pre.By, "err", err)
			continue
		}
		a.log.Info("preempted job", "job", pre.Job, "for", pre.By, "priority", pre.Priority, "for_priority", pre.ByPriority)
		a.recorder.Eventf(tj, corev1.EventTypeWarning, v1.EventPreempted, "Preempted by %s (priority %d): %s", pre.By, pre.ByPriority, pre.Reason)
	}
	for _, adm := range d.Admitted {
		if blocked[adm.Job] {
			continue
		}
		tj := objects[adm.Job]
		conds := []metav1.Condition{{Type: v1.ConditionQueued, Status: metav1.ConditionFalse, Reason: v1.ReasonAdmitted,
			Message: "admitted: " + adm.Reason}}
		if meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionPreempted) {
			conds = append(conds, metav1.Condition{Type: v1.ConditionPreempted, Status: metav1.ConditionFalse, Reason: v1.ReasonReadmitted,
				Message: "admitted again: " + adm.Reason})
		}
		if err := a.writeQueued(ctx, tj, "", conds...); err != nil {
			a.log.Warn("admitting the job failed; the next plan retries", "job", adm.Job, "err", err)
			continue
		}
		a.log.Info("admitted job", "job", adm.Job, "reason", adm.Reason)
		if a.cfg.Metrics != nil {
			a.cfg.Metrics.Admitted(now.Sub(queuedSince(tj)))
		}
		a.recorder.Eventf(tj, corev1.EventTypeNormal, v1.EventAdmitted, "Admitted: %s", adm.Reason)
	}
	for _, w := range d.Waiting {
		tj := objects[w.Job]
		kind := w.Kind
		if kind == v1.ReasonWaitingForAdmission && meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionPreempted) {
			kind = v1.ReasonPreempted // a preempted job says so until it is back
		}
		if c := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionQueued); c != nil && c.Message == w.Reason && c.Reason == kind {
			continue
		}
		cond := metav1.Condition{Type: v1.ConditionQueued, Status: metav1.ConditionTrue, Reason: kind, Message: w.Reason}
		if err := a.writeQueued(ctx, tj, w.Reason, cond); err != nil {
			a.log.Debug("recording the job's place in the queue failed; the next plan retries", "job", w.Job, "err", err)
		}
	}
}

// writeQueued sets the job's conditions (Queued, Preempted), and the phase's
// reason and message of a Queued job to the Queued condition's when message
// is not "", with an update that fails if the job changed since the
// informer saw it.
func (a *Autoscaler) writeQueued(ctx context.Context, tj *v1.TrainingJob, message string, conds ...metav1.Condition) error {
	update := tj.DeepCopy()
	for _, cond := range conds {
		cond.ObservedGeneration = tj.Generation
		meta.SetStatusCondition(&update.Status.Conditions, cond)
		if cond.Type == v1.ConditionQueued && message != "" && update.Status.Phase == v1.PhaseQueued {
			update.Status.Reason, update.Status.Message = cond.Reason, message
			// The Ready condition carries the phase's reason and message too.
			if r := meta.FindStatusCondition(update.Status.Conditions, v1.ConditionReady); r != nil && r.Status == metav1.ConditionFalse {
				r.Reason, r.Message = cond.Reason, message
			}
		}
	}
	_, err := a.tjClient.PaddlepaddleV1().TrainingJobs(tj.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update the status of %s: %w", key(tj), err)
	}
	return nil
}
