package autoscaler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	log "github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
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
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
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
	// PodInformer and NodeInformer, when set, wake a plan between the
	// ticks for the events it acts on at once: a pod that outranks trainers
	// turning unschedulable, room freeing ([Config.WakeDelay]). Unset, it
	// plans on the ticks only. They may be the tracker's.
	PodInformer  coreinformers.PodInformer
	NodeInformer coreinformers.NodeInformer
	// QueueInformer, when set, feeds the TrainingQueues: the teams that
	// share the cluster by weight. Unset, jobs share it by fulfillment.
	QueueInformer tjinformers.TrainingQueueInformer
	// GPUResourceNames are the extended resources counted as GPUs, for the
	// TrainingQueues' figures; empty means the default GPU name.
	GPUResourceNames []corev1.ResourceName
	// Recorder records the scaling events of the jobs.
	Recorder record.EventRecorder
	Logger   log.Logger
	// Clock tells the planning time and ticks; nil means the real clock.
	Clock clock.WithTicker

	// Interval between two plans.
	Interval time.Duration
	// WakeDelay is how long a plan an event wakes waits for more events,
	// so that it sees a burst whole; at most one such plan runs per
	// interval besides the tick's. 0 means a fifth of the interval, at most
	// a second; negative plans on the ticks only.
	WakeDelay time.Duration
	// MaxLoadDesired, CoolDown, MaxGrowPerCycle and RebalanceGap are passed
	// to Plan.
	MaxLoadDesired  float64
	CoolDown        time.Duration
	MaxGrowPerCycle int32
	RebalanceGap    float64
	// Policy is planner.Options.Policy.
	Policy planner.Policy
	// GrowMargin is planner.Options.GrowMargin: growth stops this far below
	// MaxLoadDesired. 0 means planner.DefaultGrowMargin; negative, none.
	GrowMargin float64
	// MaxMovesPerSecond caps the trainers rebalancing and reclaim move per
	// second: a plan moves this many per second since the plan before, at
	// most an interval's ([planner.MovesPerCycle]), rebalancing alone half
	// of it; 0 means
	// planner.DefaultMovesPerSecond.
	MaxMovesPerSecond float64
	// PriceResizes prices the resizes of jobs that restart on one.
	PriceResizes bool
	// DryRun plans and logs, and patches nothing.
	DryRun bool
	// GangAdmission admits the queued jobs (condition Queued True) whose
	// whole minimum fits ([planner.Decide], [Autoscaler.recordQueue]); the controller gates their
	// pods until then. Off, no job is queued.
	GangAdmission bool
	// Preemption lets a queued job of a higher priority that does not fit
	// even with every job of a lower priority at its minimum stop the fewest
	// running jobs of a lower priority whole ([planner.Decide] with Options.Preemption); only with
	// GangAdmission, which requeues them.
	Preemption bool
	// StartDeadline: an admitted job whose minimum is not all running this
	// long after its admission goes back to the queue ([Autoscaler.requeue]);
	// 0 waits for ever. StartRetries is how many times it is admitted again
	// after a backoff; after the last it stays queued.
	StartDeadline time.Duration
	StartRetries  int32
	// Metrics receives the measurements of every cycle; nil reports nothing.
	Metrics Metrics
}

// Metrics receives what the autoscaler measures; pkg/metrics implements it
// for Prometheus.
type Metrics interface {
	// Planned reports one cycle: how long the snapshot and the plan took, the
	// snapshot, and the elastic jobs planned for, their Trainers filled in.
	Planned(took time.Duration, snap snapshot.Snapshot, jobs []planner.Job)
	// Scaled reports an action whose ReplicaSet patch was applied.
	Scaled(act planner.ScaleAction)
	// Explained reports what limits each job planned for after the cycle.
	Explained(jobs []planner.Explanation)
	// ScaleFailed reports an action whose ReplicaSet patch failed: lost
	// says it lost to a concurrent writer (the next plan starts from what
	// that wrote), else the API server failed or refused it.
	ScaleFailed(act planner.ScaleAction, lost bool)
	// Queued reports how long each job still queued after the cycle has
	// waited since it last entered the queue (none with gang admission
	// off).
	Queued(waits []time.Duration)
	// Admitted reports an admission recorded, with how long the job waited
	// since it last entered the queue.
	Admitted(wait time.Duration)
	// Requeued reports an admitted job sent back to the queue because it
	// did not start within the start deadline; final when it will not be
	// tried again.
	Requeued(final bool)
	// Teams reports each team's deserved and used share after the cycle's
	// plan (none without TrainingQueues).
	Teams(shares []planner.TeamShare)
}

// Autoscaler runs Plan every interval on a snapshot of the cluster and the
// Running elastic jobs, and applies its actions ([Autoscaler.applyActions]): it patches the
// trainer ReplicaSets whose count changes, recording each decision as an
// event and in the job's status. It writes nothing when nothing changes.
type Autoscaler struct {
	kubeClient kubernetes.Interface
	tjClient   tjclient.Interface

	tracker         *cluster.Tracker
	jobs            tjlisters.TrainingJobLister
	replicaSets     appslisters.ReplicaSetLister
	priorityClasses schedulinglisters.PriorityClassLister
	queues          tjlisters.TrainingQueueLister // nil without teams
	synced          []cache.InformerSynced

	recorder record.EventRecorder
	log      log.Logger
	clock    clock.WithTicker
	cfg      Config
	wake     *waker

	// written is when each job's Scaling condition was last written (by
	// job key and UID), so that figures that move with every pod do not
	// rewrite it every cycle; see recordStatus. recorded is the last
	// scaling written into each job's status, so that a write the job
	// informer has not caught up with is not copied again from the
	// ReplicaSet ([Autoscaler.unrecorded]). RunOnce writes them, from the
	// goroutines that write a plan's statuses, and Explain reads recorded,
	// under writtenMu.
	writtenMu sync.Mutex
	written   map[string]time.Time
	recorded  map[string]v1.ScaleRecord

	// lastPlan is when RunOnce last planned (UnixNano; 0 before the first
	// plan): a plan's moves are the rate's share of the time since, so that
	// woken plans do not add to it. Explain reads it from another goroutine.
	lastPlan atomic.Int64
}

// New returns an Autoscaler reading cfg's tracker and informers.
func New(cfg Config) *Autoscaler {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	a := &Autoscaler{
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
		wake:     newWaker(),
	}
	if cfg.QueueInformer != nil {
		a.queues = cfg.QueueInformer.Lister()
		a.synced = append(a.synced, cfg.QueueInformer.Informer().HasSynced)
	}
	var pods, nodes cache.SharedIndexInformer
	if cfg.PodInformer != nil {
		pods = cfg.PodInformer.Informer()
	}
	if cfg.NodeInformer != nil {
		nodes = cfg.NodeInformer.Informer()
	}
	if err := a.wake.register(pods, nodes, cfg.JobInformer.Informer()); err != nil {
		// Only a stopped informer refuses a handler: plan on the ticks.
		a.log.Warn("planning on the interval only", "err", err)
	}
	return a
}

// Run plans every interval, and once more per interval soon after an event
// the plan acts on at once ([Config.WakeDelay]), until ctx is done.
func (a *Autoscaler) Run(ctx context.Context) error {
	a.log.Info("starting the autoscaler", "interval", a.cfg.Interval, "max_load_desired", a.cfg.MaxLoadDesired,
		"cooldown", a.cfg.CoolDown, "dry_run", a.cfg.DryRun, "gang_admission", a.cfg.GangAdmission, "preemption", a.cfg.Preemption)
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		if ctx.Err() != nil {
			return nil // stopped before the caches synced: nothing to do
		}
		return errors.New("the autoscaler's caches did not sync")
	}
	a.loop(ctx, func(ctx context.Context) { a.RunOnce(ctx) })
	a.log.Info("stopping the autoscaler")
	return nil
}

// RunOnce plans once and applies the plan; it returns the actions planned.
func (a *Autoscaler) RunOnce(ctx context.Context) []planner.ScaleAction {
	now := a.clock.Now()
	// 1. Snapshot the cluster: capacity, load and pods, from the tracker's
	// informers, and never a list.
	snap := a.tracker.InquiryResource()
	// 2. Read the plan's inputs from the informers: the Running elastic jobs
	// (their trainers from the snapshot), with gang admission the queue, and
	// the teams.
	in := a.readInputs(snap, now)
	// 3. Plan: a pure decision that reads no clock and calls no API.
	opts := a.options(now)
	opts.Teams = in.teams.planned
	a.lastPlan.Store(now.UnixNano())
	decision := planner.Decide(snap, in.jobs, in.queue, opts)
	a.wake.planned(in.jobs)
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Planned(a.clock.Since(now), snap, in.jobs)
		a.cfg.Metrics.Explained(decision.Jobs)
		a.cfg.Metrics.Teams(decision.Teams)
	}
	a.log.Debug("planned", "jobs", len(in.jobs), "actions", len(decision.Actions), "pending", len(snap.Pending),
		"cpu_requested_milli", snap.CPURequestMilli, "cpu_total_milli", snap.CPUTotalMilli)
	// 4. Apply: patch the trainer ReplicaSets, the scale-downs first.
	applied := a.applyActions(ctx, decision.Actions, in.elastic, now).withUnrecorded(in.unrecorded)
	// 5. Record: each job's Scaling condition and last scaling — the one
	// applied, or one only its trainer ReplicaSet holds — then the
	// preemptions, admissions and places in the queue, the jobs that did
	// not start in time sent back to it, and the teams' shares.
	a.recordScalings(ctx, decision, in.elastic, applied, now)
	a.recordQueue(ctx, decision, in.queued, now)
	a.requeue(ctx, in.notStarted, now)
	a.recordTeams(ctx, in.teams, decision.Teams)
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Queued(waits(decision.Waiting, in.queue.Jobs, now))
	}
	return decision.Actions
}
