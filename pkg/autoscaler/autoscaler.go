package autoscaler

import (
	"context"
	"errors"
	"maps"
	"sort"
	"time"

	log "github.com/inconshreveable/log15"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions/paddlepaddle/v1"
	tjlisters "github.com/paddlepaddle/edl/pkg/generated/listers/paddlepaddle/v1"
)

// Config is what an Autoscaler reads, writes and reports to, and how it
// plans.
type Config struct {
	KubeClient kubernetes.Interface
	TJClient   tjclient.Interface
	// Tracker is the cluster's capacity and load, which it snapshots every
	// interval.
	Tracker *cluster.Tracker
	// The informers of the jobs, their ReplicaSets and the PriorityClasses.
	JobInformer           tjinformers.TrainingJobInformer
	ReplicaSetInformer    appsinformers.ReplicaSetInformer
	PriorityClassInformer schedulinginformers.PriorityClassInformer
	// Recorder records the scaling events of the jobs.
	Recorder record.EventRecorder
	Logger   log.Logger
	// Clock tells the planning time; nil means the real clock.
	Clock clock.Clock

	// Interval between two plans.
	Interval time.Duration
	// MaxLoadDesired, CoolDown, MaxGrowPerCycle and RebalanceGap are passed
	// to Plan.
	MaxLoadDesired  float64
	CoolDown        time.Duration
	MaxGrowPerCycle int32
	RebalanceGap    float64
	// DryRun plans and logs, and patches nothing.
	DryRun bool
	// GangAdmission admits the queued jobs (condition Queued True) whose
	// whole minimum fits (admit.go, queue.go); the controller gates their
	// pods until then. Off, no job is queued.
	GangAdmission bool
	// Preemption lets a queued job of a higher priority that does not fit
	// even with every job of a lower priority at its minimum stop the fewest
	// running jobs of a lower priority whole (preempt.go); only with
	// GangAdmission, which requeues them.
	Preemption bool
	// Metrics receives the measurements of every cycle; nil reports nothing.
	Metrics Metrics
}

// Metrics receives what the autoscaler measures; pkg/metrics implements it
// for Prometheus.
type Metrics interface {
	// Planned reports one cycle: how long the snapshot and the plan took, the
	// snapshot, and the elastic jobs planned for, their Trainers filled in.
	Planned(took time.Duration, snap cluster.Snapshot, jobs []planner.Job)
	// Scaled reports an action whose ReplicaSet patch was applied.
	Scaled(act planner.ScaleAction)
	// Explained reports what limits each job planned for after the cycle.
	Explained(jobs []planner.Explanation)
	// ScaleFailed reports an action whose ReplicaSet patch failed: lost
	// says it lost to a concurrent writer (the next plan starts from what
	// that wrote), else the API server failed or refused it.
	ScaleFailed(act planner.ScaleAction, lost bool)
	// Queued reports how long each job still queued after the cycle has
	// waited since it was created (none with gang admission off).
	Queued(waits []time.Duration)
	// Admitted reports an admission recorded, with how long the job waited
	// since it was created.
	Admitted(wait time.Duration)
}

// Autoscaler runs Plan every interval on a snapshot of the cluster and the
// Running elastic jobs, and applies its actions (actuator.go): it patches the
// trainer ReplicaSets whose count changes, recording each decision as an
// event and in the job's status. It writes nothing when nothing changes.
type Autoscaler struct {
	kubeClient kubernetes.Interface
	tjClient   tjclient.Interface

	tracker         *cluster.Tracker
	jobs            tjlisters.TrainingJobLister
	replicaSets     appslisters.ReplicaSetLister
	priorityClasses schedulinglisters.PriorityClassLister
	synced          []cache.InformerSynced

	recorder record.EventRecorder
	log      log.Logger
	clock    clock.Clock
	cfg      Config

	// written is when each job's Scaling condition was last written (by
	// job key and UID), so that figures that move with every pod do not
	// rewrite it every cycle; see recordStatus. Only RunOnce touches it.
	written map[string]time.Time
}

// New returns an Autoscaler reading cfg's tracker and informers.
func New(cfg Config) *Autoscaler {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Autoscaler{
		kubeClient:      cfg.KubeClient,
		tjClient:        cfg.TJClient,
		tracker:         cfg.Tracker,
		jobs:            cfg.JobInformer.Lister(),
		replicaSets:     cfg.ReplicaSetInformer.Lister(),
		priorityClasses: cfg.PriorityClassInformer.Lister(),
		synced: []cache.InformerSynced{cfg.Tracker.HasSynced, cfg.JobInformer.Informer().HasSynced,
			cfg.ReplicaSetInformer.Informer().HasSynced, cfg.PriorityClassInformer.Informer().HasSynced},
		recorder: cfg.Recorder,
		log:      cfg.Logger,
		clock:    clk,
		cfg:      cfg,
	}
}

// Run plans every interval until ctx is done.
func (a *Autoscaler) Run(ctx context.Context) error {
	a.log.Info("starting the autoscaler", "interval", a.cfg.Interval, "max_load_desired", a.cfg.MaxLoadDesired,
		"cooldown", a.cfg.CoolDown, "dry_run", a.cfg.DryRun, "gang_admission", a.cfg.GangAdmission, "preemption", a.cfg.Preemption)
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		if ctx.Err() != nil {
			return nil // stopped before the caches synced: nothing to do
		}
		return errors.New("the autoscaler's caches did not sync")
	}
	// A cycle starts every interval, not an interval after the last one
	// ended: a cycle that applies many scalings spends seconds writing them
	// at the client's rate limit, and the next would start that much later.
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) { a.RunOnce(ctx) }, a.cfg.Interval)
	a.log.Info("stopping the autoscaler")
	return nil
}

// RunOnce plans once and applies the plan; it returns the actions planned.
func (a *Autoscaler) RunOnce(ctx context.Context) []planner.ScaleAction {
	now := a.clock.Now()
	snap := a.tracker.InquiryResource()
	jobs, objects := a.elasticJobs()
	jobs = planner.JobsFromSnapshot(snap, jobs)
	queue, queued := a.queue(snap)
	decision := planner.Decide(snap, jobs, queue, a.options(now))
	stopped := make(map[string]bool, len(decision.Preempted))
	for _, pre := range decision.Preempted {
		stopped[pre.Job] = true
	}
	actions := decision.Actions
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Planned(a.clock.Since(now), snap, jobs)
		a.cfg.Metrics.Explained(decision.Jobs)
	}
	a.log.Debug("planned", "jobs", len(jobs), "actions", len(actions), "pending", len(snap.Pending),
		"cpu_requested_milli", snap.CPURequestMilli, "cpu_total_milli", snap.CPUTotalMilli)
	failed := map[string]bool{}
	scaled := map[string]*v1.ScaleRecord{}
	givenBack := true // every rebalancing scale-down applied
	for _, act := range applyOrder(actions) {
		if a.cfg.DryRun {
			a.log.Info("dry run: would scale trainers", "job", act.Job, "from", act.From, "to", act.To, "reason", act.Reason)
			continue
		}
		if act.Cause == planner.CauseRebalance && act.To > act.From && !givenBack {
			// Its room was to come from a giver whose scale-down failed:
			// its pods would only wait. The next plan decides again.
			failed[act.Job] = true
			a.log.Info("not scaling up: a rebalancing scale-down it was to take the room of failed", "job", act.Job, "from", act.From, "to", act.To)
			continue
		}
		if err := a.apply(ctx, objects[act.Job], act); err != nil {
			if act.Cause == planner.CauseRebalance && act.To < act.From {
				givenBack = false
			}
			failed[act.Job] = true
			a.log.Warn("scaling trainers failed; the next plan retries", "job", act.Job, "from", act.From, "to", act.To, "err", err)
			continue
		}
		scaled[act.Job] = &v1.ScaleRecord{Time: metav1.NewTime(now), From: act.From, To: act.To, Reason: act.Reason}
	}
	if !a.cfg.DryRun {
		written := make(map[string]time.Time, len(decision.Jobs))
		for _, e := range decision.Jobs {
			if job := objects[e.Job]; job != nil {
				if t, ok := a.written[writtenKey(job)]; ok {
					written[writtenKey(job)] = t // jobs no longer planned are forgotten
				}
			}
		}
		a.written = written
		for _, e := range decision.Jobs {
			if failed[e.Job] || stopped[e.Job] {
				continue // the condition would describe a scaling that did not happen, or a job being stopped
			}
			record := scaled[e.Job]
			delete(scaled, e.Job)
			switch err := a.recordStatus(ctx, objects[e.Job], &e, record, now); {
			case errors.Is(err, errStale):
				a.log.Debug("the job changed while its limit was recorded; the next plan retries", "job", e.Job, "limit", e.Limit, "err", err)
			case err != nil:
				a.log.Warn("recording what limits the job failed; the next plan retries", "job", e.Job, "limit", e.Limit, "err", err)
			}
		}
		for job, record := range scaled { // scaled, and not explained: the record alone
			if err := a.recordScale(ctx, objects[job], record); err != nil {
				a.log.Warn("recording the scaling failed", "job", job, "err", err)
			}
		}
	}
	a.admit(ctx, decision, queued, now)
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Queued(waits(decision.Waiting, queue.Jobs, now))
	}
	return actions
}

// applyOrder is the plan's actions with the scale-downs first: the
// scale-ups of rebalancing take the room those free.
func applyOrder(actions []planner.ScaleAction) []planner.ScaleAction {
	out := make([]planner.ScaleAction, 0, len(actions))
	for _, down := range []bool{true, false} {
		for _, act := range actions {
			if (act.To < act.From) == down {
				out = append(out, act)
			}
		}
	}
	return out
}

// queue is Decide's queue — with gang admission, the queued jobs, the
// admitted ones whose pods are not all created yet and, with preemption
// too, the running jobs it may stop — and those jobs by key.
func (a *Autoscaler) queue(snap cluster.Snapshot) (planner.Queue, map[string]*v1.TrainingJob) {
	var queue planner.Queue
	if !a.cfg.GangAdmission {
		return queue, nil
	}
	var objects map[string]*v1.TrainingJob
	queue.Jobs, objects = a.queuedJobs()
	queue.Starting, queue.Arriving = a.admittedJobs(snap)
	if a.cfg.Preemption && len(queue.Jobs) > 0 {
		var running map[string]*v1.TrainingJob
		queue.Running, running = a.runningJobs()
		maps.Copy(objects, running)
	}
	return queue, objects
}

// waits are how long each waiting job has waited since it was created.
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
		DryRun:          a.cfg.DryRun,
		Preemption:      a.cfg.Preemption && a.cfg.GangAdmission,

		MaxRebalancePerCycle: planner.RebalancePerCycle(a.cfg.Interval),
	}
}

// elasticJobs are the Running jobs with min-instance < max-instance whose
// trainer ReplicaSet they control, as Plan's input, and the jobs by key.
func (a *Autoscaler) elasticJobs() ([]planner.Job, map[string]*v1.TrainingJob) {
	all, err := a.jobs.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingJobs", "err", err)
		return nil, nil
	}
	sort.Slice(all, func(i, j int) bool { return key(all[i]) < key(all[j]) })
	jobs := make([]planner.Job, 0, len(all))
	objects := make(map[string]*v1.TrainingJob, len(all))
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
		job := planner.Job{
			Key:       key(tj),
			Min:       spec.Trainer.MinInstance,
			Max:       spec.Trainer.MaxInstance,
			Current:   *rs.Spec.Replicas,
			Priority:  a.priority(spec.PriorityClassName),
			Placement: cluster.PlacementOf(template),
		}
		job.Request, job.Limits = a.tracker.PodRequestAndLimits(template)
		if last := tj.Status.LastScale; last != nil && last.To < last.From {
			job.LastScaleDown = last.Time.Time
		}
		jobs = append(jobs, job)
		objects[job.Key] = tj
	}
	return jobs, objects
}

func key(tj *v1.TrainingJob) string { return tj.Namespace + "/" + tj.Name }

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
