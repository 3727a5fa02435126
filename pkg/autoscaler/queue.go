package autoscaler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// queuedJobs are the jobs that wait for admission (condition Queued True)
// and whose ReplicaSets all exist, as Decide's input, and the jobs by key.
// A queued job's minimum is read from its ReplicaSets' templates, which is
// what its pods will be: one master for a fault-tolerant job, the pserver
// ReplicaSet's replicas, and min-instance trainers.
func (a *Autoscaler) queuedJobs() ([]QueuedJob, map[string]*v1.TrainingJob) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingJobs", "err", err)
		return nil, nil
	}
	var queue []QueuedJob
	objects := map[string]*v1.TrainingJob{}
	for _, tj := range all {
		if !meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionQueued) ||
			tj.Status.Phase == v1.PhaseSucceeded || tj.Status.Phase == v1.PhaseFailed {
			continue
		}
		roles := []v1.Role{v1.RolePserver, v1.RoleTrainer}
		if tj.Spec.FaultTolerant {
			roles = append(roles, v1.RoleMaster)
		}
		q := QueuedJob{Key: key(tj), Priority: a.priority(tj.Spec.PriorityClassName), Created: tj.CreationTimestamp.Time}
		complete := true
		for _, role := range roles {
			rs, err := a.replicaSets.ReplicaSets(tj.Namespace).Get(v1.ReplicaSetName(tj.Name, role))
			if err != nil || rs.Spec.Replicas == nil {
				complete = false
				break
			}
			if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != tj.UID {
				complete = false
				break
			}
			count := *rs.Spec.Replicas
			if role == v1.RoleTrainer {
				count = tj.Spec.Trainer.MinInstance
			}
			template := &rs.Spec.Template.Spec
			req, _ := a.tracker.PodRequestAndLimits(template)
			q.Pods = append(q.Pods, PodSet{Role: role.Name(), Count: count, Request: req, Placement: cluster.PlacementOf(template)})
		}
		if !complete {
			continue // the controller is still creating it
		}
		queue = append(queue, q)
		objects[q.Key] = tj
	}
	return queue, objects
}

// admit records the admissions and the queue's positions in the jobs'
// status; the controller removes the gates of an admitted job's pods. A
// failed write is retried by the next plan, which decides again.
func (a *Autoscaler) admit(ctx context.Context, d Decision, objects map[string]*v1.TrainingJob, now time.Time) {
	for _, adm := range d.Admitted {
		if a.cfg.DryRun {
			a.log.Info("dry run: would admit job", "job", adm.Job, "reason", adm.Reason)
			continue
		}
		tj := objects[adm.Job]
		cond := metav1.Condition{Type: v1.ConditionQueued, Status: metav1.ConditionFalse, Reason: v1.ReasonAdmitted,
			Message: "admitted: " + adm.Reason}
		if err := a.writeQueued(ctx, tj, cond, ""); err != nil {
			a.log.Warn("admitting the job failed; the next plan retries", "job", adm.Job, "err", err)
			continue
		}
		a.log.Info("admitted job", "job", adm.Job, "reason", adm.Reason)
		if a.cfg.Metrics != nil {
			a.cfg.Metrics.Admitted(now.Sub(tj.CreationTimestamp.Time))
		}
		a.recorder.Eventf(tj, corev1.EventTypeNormal, v1.EventAdmitted, "Admitted: %s", adm.Reason)
	}
	for _, w := range d.Waiting {
		tj := objects[w.Job]
		if c := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionQueued); c != nil && c.Message == w.Reason {
			continue
		}
		if a.cfg.DryRun {
			a.log.Debug("dry run: job waits", "job", w.Job, "reason", w.Reason)
			continue
		}
		cond := metav1.Condition{Type: v1.ConditionQueued, Status: metav1.ConditionTrue, Reason: v1.ReasonWaitingForAdmission,
			Message: w.Reason}
		if err := a.writeQueued(ctx, tj, cond, w.Reason); err != nil {
			a.log.Debug("recording the job's place in the queue failed; the next plan retries", "job", w.Job, "err", err)
		}
	}
}

// writeQueued sets the job's Queued condition, and the status message of a
// Queued phase to message when it is not "", with an update that fails if
// the job changed since the informer saw it.
func (a *Autoscaler) writeQueued(ctx context.Context, tj *v1.TrainingJob, cond metav1.Condition, message string) error {
	update := tj.DeepCopy()
	cond.ObservedGeneration = tj.Generation
	meta.SetStatusCondition(&update.Status.Conditions, cond)
	if message != "" && update.Status.Phase == v1.PhaseQueued {
		update.Status.Message = message
		// The Ready condition carries the phase's message too.
		if r := meta.FindStatusCondition(update.Status.Conditions, v1.ConditionReady); r != nil && r.Reason == v1.ReasonWaitingForAdmission {
			r.Message = message
		}
	}
	_, err := a.tjClient.PaddlepaddleV1().TrainingJobs(tj.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update the status of %s: %w", key(tj), err)
	}
	return nil
}
