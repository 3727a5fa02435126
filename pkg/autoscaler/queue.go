package autoscaler

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// queuedJobs are the jobs that wait for admission (condition Queued True)
// and whose ReplicaSets all exist, as Decide's input, and the jobs by key.
func (a *Autoscaler) queuedJobs() ([]planner.QueuedJob, map[string]*v1.TrainingJob) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingJobs", "err", err)
		return nil, nil
	}
	var queue []planner.QueuedJob
	objects := map[string]*v1.TrainingJob{}
	for _, tj := range all {
		if !meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionQueued) || tj.Spec.Suspend ||
			tj.Status.Phase == v1.PhaseSucceeded || tj.Status.Phase == v1.PhaseFailed {
			continue
		}
		q, ok := a.minimumOf(tj)
		if !ok {
			continue // the controller is still creating it
		}
		queue = append(queue, q)
		objects[q.Key] = tj
	}
	return queue, objects
}

// minimumOf returns a job's minimum, read from its ReplicaSets' templates,
// which is what its pods will be: one master for a fault-tolerant job,
// pserver.min-instance pservers and trainer.min-instance trainers; false
// while one of its ReplicaSets is missing.
func (a *Autoscaler) minimumOf(tj *v1.TrainingJob) (planner.QueuedJob, bool) {
	roles := []v1.Role{v1.RolePserver, v1.RoleTrainer}
	if tj.Spec.FaultTolerant {
		roles = append(roles, v1.RoleMaster)
	}
	q := planner.QueuedJob{Key: key(tj), Priority: a.priority(tj.Spec.PriorityClassName), Created: tj.CreationTimestamp.Time,
		MaxTrainers: tj.Spec.Trainer.MaxInstance}
	for _, role := range roles {
		rs, err := a.replicaSets.ReplicaSets(tj.Namespace).Get(v1.ReplicaSetName(tj.Name, role))
		if err != nil || rs.Spec.Replicas == nil {
			return q, false
		}
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != tj.UID {
			return q, false
		}
		// A queued job's ReplicaSets are held at 0 replicas: its minimum
		// is what admission scales them to.
		count := int32(1)
		switch role {
		case v1.RolePserver:
			count = tj.Spec.Pserver.MinInstance
		case v1.RoleTrainer:
			count = tj.Spec.Trainer.MinInstance
		}
		template := &rs.Spec.Template.Spec
		req, lim := a.tracker.PodRequestAndLimits(template)
		q.Pods = append(q.Pods, planner.PodSet{Role: role.Name(), Count: count, Request: req, Limits: lim, Placement: cluster.PlacementOf(template)})
	}
	return q, true
}

// admittedJobs are the jobs admitted but not Running yet. Starting are
// those whose minimum's pods do not all exist yet, with the pods that are
// missing: the room an earlier plan admitted them into, which no other job
// may take before the ReplicaSet controller creates them. Arriving are the
// elastic ones, for growth to keep their share (arrive.go).
func (a *Autoscaler) admittedJobs(snap cluster.Snapshot) (starting []planner.QueuedJob, arriving []planner.ArrivingJob) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		return nil, nil
	}
	for _, tj := range all {
		c := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionQueued)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonAdmitted || tj.Spec.Suspend ||
			tj.Status.Phase == v1.PhaseRunning || tj.Status.Phase == v1.PhaseSucceeded || tj.Status.Phase == v1.PhaseFailed {
			continue
		}
		q, ok := a.minimumOf(tj)
		if !ok {
			continue
		}
		if arr, ok := q.Arriving(c.LastTransitionTime.Time); ok {
			arriving = append(arriving, arr)
		}
		// Clamped: more than a minimum's worth leaves nothing missing.
		trainers := int32(min(len(snap.TrainerPods(q.Key)), math.MaxInt32)) // #nosec G115 -- clamped to MaxInt32
		servers := int32(min(len(snap.Servers[q.Key]), math.MaxInt32))      // #nosec G115 -- clamped to MaxInt32
		missing := false
		for i := range q.Pods {
			s := &q.Pods[i]
			have := &servers
			if s.Role == v1.RoleTrainer.Name() {
				have = &trainers
			}
			took := min(*have, s.Count)
			*have -= took
			s.Count -= took
			missing = missing || s.Count > 0
		}
		if missing {
			starting = append(starting, q)
		}
	}
	return starting, arriving
}

// runningJobs are the admitted jobs that may hold pods — not queued,
// suspended or finished, past Pending — as the running jobs preemption may
// stop, and the jobs by key.
func (a *Autoscaler) runningJobs() ([]planner.RunningJob, map[string]*v1.TrainingJob) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingJobs", "err", err)
		return nil, nil
	}
	var running []planner.RunningJob
	objects := map[string]*v1.TrainingJob{}
	for _, tj := range all {
		if tj.Spec.Suspend || meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionQueued) ||
			(tj.Status.Phase != v1.PhaseRunning && tj.Status.Phase != v1.PhaseCreating) {
			continue
		}
		running = append(running, planner.RunningJob{Key: key(tj), Priority: a.priority(tj.Spec.PriorityClassName), Created: tj.CreationTimestamp.Time})
		objects[key(tj)] = tj
	}
	return running, objects
}

// admit records the plan's preemptions, admissions and the queue's
// positions in the jobs' status; the controller scales an admitted job up
// and a preempted one down. A preemption is written before the admission it
// makes room for, and a job whose preemptions were not all written is not
// admitted: the next plan decides again. A failed write is retried by the
// next plan.
func (a *Autoscaler) admit(ctx context.Context, d planner.Decision, objects map[string]*v1.TrainingJob, now time.Time) {
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
			a.cfg.Metrics.Admitted(now.Sub(tj.CreationTimestamp.Time))
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
