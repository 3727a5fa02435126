package autoscaler

import (
	"maps"
	"math"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/frameworks"
	"github.com/paddlepaddle/edl/pkg/progress"
)

// inputs are what one cycle plans with, read from the informers, and the
// TrainingJobs they came from, by key, for the writes that follow the plan.
type inputs struct {
	// jobs are the Running elastic jobs, their trainers from the snapshot.
	jobs []planner.Job
	// elastic are the TrainingJobs of jobs.
	elastic map[string]*v1.TrainingJob
	// unrecorded are the last scalings of jobs that only their trainer
	// ReplicaSets hold, by key: the status write that follows a scaling
	// did not happen.
	unrecorded map[string]*scaling
	// queue is Decide's queue; queued its TrainingJobs (the queued ones, the
	// running ones it may preempt).
	queue  planner.Queue
	queued map[string]*v1.TrainingJob
	// teams are the TrainingQueues and the teams they make.
	teams teams
	// notStarted are the admitted jobs past their start deadline, which go
	// back to the queue ([Autoscaler.requeue]); the plan holds no room for
	// them.
	notStarted []notStarted
}

// readInputs reads the cycle's inputs at now from the informers and snap.
func (a *Autoscaler) readInputs(snap snapshot.Snapshot, now time.Time) inputs {
	var in inputs
	in.jobs, in.elastic, in.unrecorded = a.elasticJobs()
	in.jobs = planner.JobsFromSnapshot(snap, in.jobs)
	in.queue, in.queued, in.notStarted = a.queue(snap, now)
	in.teams = a.readTeams()
	return in
}

// queue is Decide's queue at now — with gang admission, the queued jobs
// not waiting out a requeue's backoff, the admitted ones whose pods are not
// all created yet and, with preemption too, the running jobs it may stop —
// those jobs by key, and the admitted jobs past their start deadline.
func (a *Autoscaler) queue(snap snapshot.Snapshot, now time.Time) (planner.Queue, map[string]*v1.TrainingJob, []notStarted) {
	var queue planner.Queue
	if !a.cfg.GangAdmission {
		return queue, nil, nil
	}
	var objects map[string]*v1.TrainingJob
	var late []notStarted
	queue.Jobs, objects = a.queuedJobs(now)
	queue.Starting, queue.Arriving, late = a.admittedJobs(snap, now)
	if a.cfg.Preemption && len(queue.Jobs) > 0 {
		var running map[string]*v1.TrainingJob
		queue.Running, running = a.runningJobs()
		maps.Copy(objects, running)
	}
	return queue, objects, late
}

// waits are how long each waiting job has waited since it last entered the
// queue (QueuedJob.Created is that time).
func waits(waiting []planner.Waiting, queue []planner.QueuedJob, now time.Time) []time.Duration {
	created := make(map[string]time.Time, len(queue))
	for _, q := range queue {
		created[q.Key] = q.Created
	}
	out := make([]time.Duration, 0, len(waiting))
	for _, w := range waiting {
		out = append(out, now.Sub(created[w.Job]))
	}
	return out
}

// options are the Plan options of the cycle at now.
func (a *Autoscaler) options(now time.Time) planner.Options {
	return planner.Options{
		MaxLoadDesired:  a.cfg.MaxLoadDesired,
		Now:             now,
		CoolDown:        a.cfg.CoolDown,
		MaxGrowPerCycle: a.cfg.MaxGrowPerCycle,
		RebalanceGap:    a.cfg.RebalanceGap,
		Policy:          a.cfg.Policy,
		GrowMargin:      growMargin(a.cfg.GrowMargin),
		DryRun:          a.cfg.DryRun,
		Preemption:      a.cfg.Preemption && a.cfg.GangAdmission,

		MaxRebalancePerCycle: planner.MovesPerCycle(a.sinceLastPlan(now), a.cfg.MaxMovesPerSecond),
	}
}

// sinceLastPlan is the time a plan at now stands for, for the moves it may
// make: since the last plan, at most an interval (the first plan's is one).
// A plan an event woke between two ticks moves the rate's share of the time
// since the tick, and the next tick's the rest, so that
// -max_moves_per_second holds however many plans run.
func (a *Autoscaler) sinceLastPlan(now time.Time) time.Duration {
	last := a.lastPlan.Load()
	if last == 0 {
		return a.cfg.Interval
	}
	return max(0, min(a.cfg.Interval, now.Sub(time.Unix(0, last))))
}

// elasticJobs are the Running jobs with min-instance < max-instance whose
// trainer ReplicaSet they control, as Plan's input, the jobs by key, and
// the last scalings that only their trainer ReplicaSets hold
// ([lastScaleOf]), by key. A job's cool-downs start at its last scaling,
// wherever it is recorded.
func (a *Autoscaler) elasticJobs() ([]planner.Job, map[string]*v1.TrainingJob, map[string]*scaling) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingJobs", "err", err)
		return nil, nil, nil
	}
	sort.Slice(all, func(i, j int) bool { return key(all[i]) < key(all[j]) })
	jobs := make([]planner.Job, 0, len(all))
	objects := make(map[string]*v1.TrainingJob, len(all))
	var unrecorded map[string]*scaling
	for _, tj := range all {
		spec := &tj.Spec
		if tj.Status.Phase != v1.PhaseRunning || spec.Suspend || spec.Trainer.MinInstance >= spec.Trainer.MaxInstance {
			continue
		}
		rs, err := a.replicaSets.ReplicaSets(tj.Namespace).Get(v1.ReplicaSetName(tj.Name, v1.RoleTrainer))
		if err != nil || rs.Spec.Replicas == nil {
			continue
		}
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != tj.UID {
			continue // someone else's ReplicaSet: the controller reports it
		}
		template := &rs.Spec.Template.Spec
		current := *rs.Spec.Replicas
		if to, ok := v1.ScaleDownTo(rs.Annotations); ok && to < current {
			current = to // decided, and lowered by the controller once the host list dropped the trainers
		}
		job := planner.Job{
			Key:       key(tj),
			Min:       spec.Trainer.MinInstance,
			Max:       spec.Trainer.MaxInstance,
			Current:   current,
			Priority:  a.priority(spec.PriorityClassName),
			Placement: snapshot.PlacementOf(template),
		}
		job.Request, job.Limits = a.tracker.AdmittedPodRequestAndLimits(tj.Namespace, template)
		if t := tj.Status.LastScaleDown; t != nil {
			job.LastScaleDown = t.Time
		}
		last, missing := lastScaleOf(tj, rs)
		if missing {
			if last.To < last.From && last.Time.After(job.LastScaleDown) {
				job.LastScaleDown = last.Time.Time
			}
			if s := a.unrecorded(tj, last); s != nil {
				if unrecorded == nil {
					unrecorded = map[string]*scaling{}
				}
				unrecorded[job.Key] = s
			}
		}
		if a.cfg.PriceResizes {
			priceOf(&job, tj, last)
		}
		job.NamesRemovals = frameworks.LeavesFirst(&tj.Spec)
		job.Progress = ProgressOf(tj.Status.Progress)
		jobs = append(jobs, job)
		objects[job.Key] = tj
	}
	return jobs, objects, unrecorded
}

func key(tj *v1.TrainingJob) string { return tj.Namespace + "/" + tj.Name }

// ProgressOf is what a job's progress status tells the planner; nil for
// a job that reports nothing.
func ProgressOf(s *v1.ProgressStatus) *planner.Progress {
	if s == nil {
		return nil
	}
	p := &planner.Progress{Model: progress.Model(s), Batch: 1, Nodes: s.Nodes}
	if s.Batch > 0 {
		p.Batch = float64(s.Batch)
	}
	p.Throughput, _ = progress.Throughput(s, s.Trainers, s.Nodes)
	if s.FinishesAt != nil {
		p.Left = max(s.FinishesAt.Sub(s.Reported.Time), 0)
	}
	return p
}

// priority resolves a PriorityClass name the way the Priority admission
// plugin does: the named class, or the global default class, or 0.
func (a *Autoscaler) priority(name string) int32 {
	if name != "" {
		if pc, err := a.priorityClasses.Get(name); err == nil {
			return pc.Value
		}
		return 0
	}
	classes, _ := a.priorityClasses.List(labels.Everything())
	for _, pc := range classes {
		if pc.GlobalDefault {
			return pc.Value
		}
	}
	return 0
}

// queuedJobs are the jobs that wait for admission (condition Queued True)
// and whose ReplicaSets all exist, but for those a requeue holds back at
// now ([Autoscaler.mayAdmitAgain]), as Decide's input, and the jobs by key.
func (a *Autoscaler) queuedJobs(now time.Time) ([]planner.QueuedJob, map[string]*v1.TrainingJob) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingJobs", "err", err)
		return nil, nil
	}
	var queue []planner.QueuedJob
	objects := map[string]*v1.TrainingJob{}
	for _, tj := range all {
		if !meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionQueued) || tj.Spec.Suspend ||
			tj.Status.Phase == v1.PhaseSucceeded || tj.Status.Phase == v1.PhaseFailed || !a.mayAdmitAgain(tj, now) {
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
	roles := frameworks.For(&tj.Spec).Roles(&tj.Spec)
	q := planner.QueuedJob{Key: key(tj), Priority: a.priority(tj.Spec.PriorityClassName), Created: queuedSince(tj),
		MaxTrainers: tj.Spec.Trainer.MaxInstance}
	var scoped []cluster.RolePods
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
		req, lim := a.tracker.AdmittedPodRequestAndLimits(tj.Namespace, template)
		q.Pods = append(q.Pods, planner.PodSet{Role: role.Name(), Count: count, Request: req, Limits: lim, Placement: snapshot.PlacementOf(template),
			Refused: a.tracker.AdmissionRefusal(tj.Namespace, template, tj.Spec.PriorityClassName)})
		scoped = append(scoped, cluster.RolePods{Role: role.Name(), Count: count, Spec: template})
	}
	q.UncountedQuota, q.UncountedQuotaHard = a.tracker.UncountedQuotaShort(tj.Namespace, scoped, tj.Spec.PriorityClassName)
	return q, true
}

// admittedJobs are the jobs admitted but not Running yet. Starting are
// those whose minimum's pods do not all exist yet, with the pods that are
// missing: the room an earlier plan admitted them into, which no other job
// may take before the ReplicaSet controller creates them. Arriving are the
// elastic ones, for growth to keep their share ([planner.ArrivingJob]).
// Late are those past their start deadline at now: they hold nothing, and
// go back to the queue.
func (a *Autoscaler) admittedJobs(snap snapshot.Snapshot, now time.Time) (starting []planner.QueuedJob, arriving []planner.ArrivingJob, late []notStarted) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		return nil, nil, nil
	}
	for _, tj := range all {
		c := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionQueued)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonAdmitted || tj.Spec.Suspend ||
			tj.Status.Phase == v1.PhaseRunning || tj.Status.Phase == v1.PhaseSucceeded || tj.Status.Phase == v1.PhaseFailed {
			continue
		}
		if a.pastStartDeadline(tj, c, now) {
			late = append(late, notStarted{job: tj, admitted: c.LastTransitionTime.Time})
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
	return starting, arriving, late
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
		r := planner.RunningJob{Key: key(tj), Priority: a.priority(tj.Spec.PriorityClassName), Created: tj.CreationTimestamp.Time}
		if tj.Status.Phase == v1.PhaseRunning {
			r.MinPods = tj.Spec.Trainer.MinInstance + tj.Spec.Pserver.MinInstance
		}
		running = append(running, r)
		objects[key(tj)] = tj
	}
	return running, objects
}

// queuedSince is when a job last entered the queue: its Queued condition's
// last transition to True — the time it was submitted, resumed or preempted
// (a change of waiting reason keeps it) — and its creation time when that
// is earlier or absent. A job suspended for a week or preempted thus queues
// behind the jobs of its priority that entered the queue before it did.
func queuedSince(tj *v1.TrainingJob) time.Time {
	since := tj.CreationTimestamp.Time
	if c := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(since) {
		since = c.LastTransitionTime.Time
	}
	return since
}
