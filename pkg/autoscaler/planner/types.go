package planner

import (
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/scaling"
)

// Resources is one trainer's effective request (CPU millicores, memory MiB,
// GPUs), the same type the cluster snapshot reports in.
type Resources = snapshot.Resources

// TrainerPod is one live trainer pod as the cluster snapshot reports it.
type TrainerPod = snapshot.TrainerPod

// DefaultMaxLoadDesired is the original EDL's -max_load_desired default, used
// when Options.MaxLoadDesired is not positive.
const DefaultMaxLoadDesired = 0.97

// Job is one elastic TrainingJob as the planner sees it. The caller fills the
// scalar fields from the TrainingJob and its trainer ReplicaSet, and Trainers
// from the snapshot (see JobsFromSnapshot).
type Job struct {
	// Key is "namespace/name", the key of the snapshot's Trainers map.
	Key string
	// Min and Max are the trainer's min-instance and max-instance.
	Min, Max int32
	// Current is the trainer ReplicaSet's spec.replicas: what was asked for,
	// not what runs. Plan scales from it (ScaleAction.From) and keeps it in
	// [Min, Max]; fulfillment is measured from Trainers instead (the original
	// EDL measured it from the desired count).
	Current int32
	// Priority is the trainers' pod priority: the newest trainer's
	// spec.priority once a trainer exists (JobsFromSnapshot), else resolved
	// from the template's priorityClassName by the caller.
	Priority int32
	// Request is one trainer's effective request as admitted: the newest
	// trainer's once one exists (JobsFromSnapshot), with the LimitRange
	// defaults and RuntimeClass overhead admission added, else the pod
	// template's. New trainers are planned with it. Limits likewise, for
	// quotas on limits.
	Request, Limits Resources
	// Placement is where the trainers may run, from the pod template.
	Placement *snapshot.Placement
	// Trainers are the job's live trainer pods. Existing pods are accounted
	// with their own requests, which may differ from Request after a template
	// change.
	Trainers []TrainerPod
	// LastScaleDown is when the job was last scaled down
	// (ScaleAction.StartsCoolDown); zero for never.
	LastScaleDown time.Time
	// RestartsOnResize: every resize stops and restarts all of the job's
	// trainers (torchrun), so a resize has a price ([Job.ResizeCoolDown]):
	// the job is resized at most once per cool-down but to yield to pods
	// of a higher priority, and grown in one step, MaxGrowPerCycle aside.
	RestartsOnResize bool
	// ResizeCost is the measured time from a resize of the job until all
	// of its trainers run again; LastResize is the time of its last resize
	// (zero for never), and MinResizeInterval a floor its spec sets.
	ResizeCost, MinResizeInterval time.Duration
	LastResize                    time.Time
	// NamesRemovals: the job's framework must hear that a trainer goes
	// before its pod is deleted (a Horovod job's host-discovery file), so
	// every scale-down names each existing trainer it removes in
	// ScaleAction.Remove, not only those picked by node, and the actuator
	// marks them all before it lowers the replicas.
	NamesRemovals bool
	// Progress is what the job's training reports of itself (the progress
	// contract); nil for a job that reports nothing.
	Progress *Progress
}

// Progress is what a job's progress reports tell the planner.
type Progress struct {
	// Model is the job's scaling model, fitted to the throughput measured
	// at the sizes it ran at; the zero Model when none is measured yet.
	Model scaling.Model
	// Batch is the global batch the model computes with.
	Batch float64
	// Nodes is the nodes the job's trainers ran on at its last report.
	Nodes int32
	// Throughput is the job's at the size of its last report, in its unit
	// a second (measured, else predicted); 0 when unknown.
	Throughput float64
	// Left is the time the job had left at its last report; 0 when
	// unknown.
	Left time.Duration
}

// Speedup is the job's throughput at n trainers relative to one trainer's,
// as its model predicts it (AdaptDL's optimistic prior above the sizes
// measured): n itself for a job measured at no size.
func (p *Progress) Speedup(n int32) float64 {
	if p == nil {
		return float64(n)
	}
	return p.Model.Predict(int(n), int(min(max(p.Nodes, 1), n)), p.Batch).Speedup
}

// Options tunes Plan.
type Options struct {
	// MaxLoadDesired is the highest share of allocatable CPU, memory and GPU
	// that requests may reach; above it trainers are given back. Not positive
	// means DefaultMaxLoadDesired.
	MaxLoadDesired float64
	// Now is the planning time: the cool-down counts from it, and a pod
	// still terminating SettleSlack after its grace period ended is taken
	// to be stuck (on a lost node, behind a finalizer) rather than about to
	// free its room.
	Now time.Time
	// CoolDown is how long after a scale-down a job is not grown again, to
	// stop a job from flapping when capacity comes and goes.
	CoolDown time.Duration
	// MaxGrowPerCycle caps the trainers one plan adds to any one job; 0 means
	// no cap. It bounds the burst of pod creations and of trainer re-sharding
	// a single job sees per cycle, without starving the other jobs, which
	// still get their turn by fulfillment.
	MaxGrowPerCycle int32
	// MaxRebalancePerCycle caps the trainers rebalancing and reclaim move in
	// one plan, over all jobs; rebalancing alone moves at most half of it,
	// so that half of kube-controller-manager's rate stays with the pods of
	// jobs starting and growing; 0 means no cap. Each move is a pod deleted and one
	// created by the ReplicaSet controller, and the room stays idle until
	// both are done: moved in one wave, a hundred trainers idle the room of
	// the last for as long as the controller takes over all of them.
	MaxRebalancePerCycle int32
	// RebalanceGap is how far, in fulfillment, the most fulfilled running job
	// of a priority may be above the least fulfilled one before it gives
	// trainers back for it. Not positive means DefaultRebalanceGap; 1 or more
	// turns rebalancing off.
	RebalanceGap float64
	// DryRun says that the actions will not be applied: a job the plan
	// would scale is explained as held by the dry run. It changes no
	// action.
	DryRun bool
	// Preemption lets a queued job whose minimum does not fit even with
	// every job of a lower priority at its minimum stop whole the fewest
	// running jobs of a lower priority (Queue.Running) that make it fit
	// ([plan.preempt]).
	Preemption bool
	// GrowMargin is how far below MaxLoadDesired growth stops, while the
	// load rule still takes trainers back only above MaxLoadDesired: the
	// band between them keeps a trainer the load rule took from being
	// grown back with no change in the cluster. Not positive means none;
	// edl's default is DefaultGrowMargin.
	GrowMargin float64
	// Policy is how the jobs of one priority (and team) share what is
	// idle and what rebalancing moves: PolicyFulfillment (the zero value)
	// or PolicyGoodput.
	Policy Policy
	// Teams are the teams sharing the cluster (the TrainingQueues); with
	// any, each team deserves a weighted fair share of every pool and
	// growth serves the team furthest below its share first. Empty, the
	// jobs share the cluster by fulfillment alone.
	Teams []Team
}

// Decision is a plan with its explanations.
type Decision struct {
	// Actions are Plan's.
	Actions []ScaleAction
	// Jobs explains every job given to the plan, sorted by key: exactly one
	// Explanation per distinct key.
	Jobs []Explanation
	// Admitted are the queued jobs admitted ([plan.admit]), Waiting those that
	// still wait, in queue order, and Preempted the running jobs stopped
	// whole for admitted ones ([plan.preempt]).
	Admitted  []Admission
	Waiting   []Waiting
	Preempted []Preemption
	// Teams are the teams' shares after the plan, by name; none without
	// Options.Teams.
	Teams []TeamShare
}

// ScaleAction is one decision of a plan: set the job's trainer replicas from
// From to To, for Reason.
type ScaleAction struct {
	Job  string `json:"job"`
	From int32  `json:"from"`
	To   int32  `json:"to"`
	// Reason explains the decision with the numbers behind it.
	Reason string `json:"reason"`
	// Cause is the kind of reason, for counting decisions.
	Cause Cause `json:"cause"`
	// Nodes lists, for a scale-up, the node the planner found room on for each
	// added trainer and, for a scale-down, the node each trainer the
	// ReplicaSet controller is expected to delete runs on ("" for one not yet
	// scheduled). The scheduler and the ReplicaSet controller make the real
	// choices; this is for logs, dry runs and tests.
	Nodes []string `json:"nodes,omitempty"`
	// Remove names, for a scale-down, the running trainers the plan picked
	// on the nodes it frees for pending pods: the actuator gives them the
	// lowest pod-deletion-cost (v1.DeletionCostRemove) before it lowers the
	// replicas, so that the controller deletes them first and the room the
	// plan freed is where it planned it. The other trainers the scale-down
	// removes (for load, by rebalancing) are any the controller chooses,
	// but for a job that names its removals (Job.NamesRemovals): Remove
	// then names every existing trainer the scale-down removes, in the
	// ReplicaSet controller's order.
	Remove []string `json:"remove,omitempty"`
}

// StartsCoolDown reports whether the action is a scale-down: the job is
// then not grown for Options.CoolDown (Job.LastScaleDown is its time). One
// that gives up only trainers no node took starts it too: growth would
// otherwise add them again the next plan, and at a scale where
// kube-scheduler lags behind the plans the job flaps between the two
// (make scale at 300 nodes: the fill removed 800 trainers and settled in
// 2m25s with such scale-downs left uncooled, 289 and 1m15s cooled).
func (a ScaleAction) StartsCoolDown() bool {
	return a.To < a.From
}

// JobsFromSnapshot returns copies of jobs with Trainers filled from snap, so
// that the caller only supplies what the TrainingJobs and ReplicaSets say,
// and with Priority, Request and Limits taken from the newest trainer, as
// admission left them, once a trainer exists. The Trainers slices are shared
// with snap, which Plan never modifies.
func JobsFromSnapshot(snap snapshot.Snapshot, jobs []Job) []Job {
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		j.Trainers = snap.TrainerPods(j.Key)
		if n := len(j.Trainers); n > 0 {
			newest := j.Trainers[n-1] // oldest first
			j.Priority, j.Request, j.Limits = newest.Priority, newest.Request, newest.Limits
		}
		out[i] = j
	}
	return out
}

// Cause is the kind of reason behind a ScaleAction.
type Cause string

const (
	// CauseIdle: the job grew into capacity that was idle.
	CauseIdle Cause = "idle"
	// CausePriority: the job shrank to make room for unschedulable pods of a
	// higher priority. A scale-down that also relieves load counts here.
	CausePriority Cause = "priority"
	// CauseMinimum: the job gave trainers above its minimum to jobs of its
	// own priority whose pods cannot be scheduled while they are below
	// theirs (a job that cannot start, or runs fewer than min trainers).
	CauseMinimum Cause = "minimum"
	// CauseRebalance: the job gave trainers back because it was more than
	// RebalanceGap more fulfilled than another job of its priority, or it
	// took the room such a job gave back (a scale-up in the same plan).
	CauseRebalance Cause = "rebalance"
	// CauseLoad: the job shrank because requests exceeded MaxLoadDesired.
	CauseLoad Cause = "load"
	// CauseUnschedulable: the job gave up trainers no node has room for.
	CauseUnschedulable Cause = "unschedulable"
	// CauseSlower: under the goodput policy, the job gave back a trainer
	// its scaling model says slows it down.
	CauseSlower Cause = "slower"
)
