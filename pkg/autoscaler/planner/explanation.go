package planner

import (
	"time"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Limit is why a job has the trainers it has after a plan: what keeps it
// from growing, or what made it shrink. The values are the reasons of the
// job's Scaling condition.
type Limit string

// The closed set of limits; docs/kubectl-edl.md says which scenario produces
// each.
const (
	// LimitAtMax: the job has max-instance trainers.
	LimitAtMax Limit = v1.ScalingAtMax
	// LimitAtMin: the job is at min-instance and a resource its trainers
	// ask for is over max_load_desired: the plan would take more if it could.
	LimitAtMin Limit = v1.ScalingAtMin
	// LimitGrowing: the plan grows the job, into idle capacity or into the
	// room a more fulfilled job gives back by rebalancing (and it stays
	// below its max).
	LimitGrowing Limit = v1.ScalingGrowing
	// LimitNoRoom: no node its trainers may use has room for one more.
	LimitNoRoom Limit = v1.ScalingNoRoom
	// LimitNoEligibleNode: no node its trainers may use could hold one
	// even empty: too big for every such node, or no such node.
	LimitNoEligibleNode Limit = v1.ScalingNoEligibleNode
	// LimitLoad: one more trainer would take a resource past
	// max_load_desired, or the job shrank because one was past it.
	LimitLoad Limit = v1.ScalingLoad
	// LimitFairShare: jobs of its priority come first — the room went to
	// jobs ahead of it in line, is kept for a less fulfilled job cooling
	// down, or the job gives trainers back to a less fulfilled one by
	// rebalancing (the one that gets them grows: LimitGrowing).
	LimitFairShare Limit = v1.ScalingFairShare
	// LimitCoolDown: the job was scaled down less than the cool-down ago.
	LimitCoolDown Limit = v1.ScalingCoolDown
	// LimitSettling: its trainers wait for a node the scheduler will find,
	// or the room it could use is still held by pods that are going.
	LimitSettling Limit = v1.ScalingSettling
	// LimitYieldedToPriority: the job shrank for pods of a higher priority.
	LimitYieldedToPriority Limit = v1.ScalingYieldedToPriority
	// LimitYieldedToMinimum: the job shrank for the pods of jobs of its
	// priority below their minimum.
	LimitYieldedToMinimum Limit = v1.ScalingYieldedToMinimum
	// LimitQuota: its namespace's ResourceQuota has no room for one more
	// trainer.
	LimitQuota Limit = v1.ScalingQuota
	// LimitNotElastic: the plan never moves the job: min == max, replicas
	// outside [min, max], or an empty or negative request.
	LimitNotElastic Limit = v1.ScalingNotElastic
	// LimitNotRunning: the job is not Running, so the plan does not see
	// it. Plan never returns it; callers that list every job do.
	LimitNotRunning Limit = v1.ScalingNotRunning
	// LimitDryRun: the plan would scale the job, but Options.DryRun says it
	// will not be applied.
	LimitDryRun Limit = v1.ScalingDryRun
	// LimitNoGain: under the goodput policy, one more trainer would add
	// less than MinGain to the job's throughput, or save less of the time
	// it has left than a restart costs.
	LimitNoGain Limit = v1.ScalingNoGain
)

// Limits lists every Limit, for metrics that show each from the start.
var Limits = []Limit{LimitAtMax, LimitAtMin, LimitGrowing, LimitNoRoom, LimitNoEligibleNode, LimitLoad,
	LimitFairShare, LimitCoolDown, LimitSettling, LimitYieldedToPriority, LimitYieldedToMinimum, LimitQuota,
	LimitNotElastic, LimitNotRunning, LimitDryRun, LimitNoGain}

// Explanation says why one job has the trainers it has after a plan.
type Explanation struct {
	Job string `json:"job"`
	// Limit is the one cause; Message a sentence with the numbers behind it.
	Limit   Limit  `json:"limit"`
	Message string `json:"message"`
	// From is the job's replicas before the plan, To after it.
	From     int32 `json:"from"`
	To       int32 `json:"to"`
	Min      int32 `json:"min"`
	Max      int32 `json:"max"`
	Priority int32 `json:"priority"`
	// Placed counts the trainers that hold a node after the plan, and
	// Fulfillment is (Placed − Min) / (Max − Min).
	Placed      int64   `json:"placed"`
	Fulfillment float64 `json:"fulfillment"`

	// The figures behind the limit; zero where they do not apply.

	// Resource names the resource that limits: for LimitLoad and
	// LimitAtMin the one over max_load_desired, for LimitQuota the quota's
	// (requests.cpu, pods, …).
	Resource string `json:"resource,omitempty"`
	// Load is that resource's requests / allocatable, and Threshold is
	// max_load_desired (LimitLoad, LimitAtMin).
	Load      float64 `json:"load,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
	// Need is one trainer's request (LimitNoRoom, LimitNoEligibleNode,
	// LimitLoad, LimitQuota).
	Need Resources `json:"need,omitempty"`
	// Room is, for LimitNoRoom, the largest room on a node the trainers may
	// use (the node that could hold the largest part of a trainer), for
	// LimitNoEligibleNode the largest allocatable of such a node; Node names
	// that node ("" when there is none).
	Room Resources `json:"room,omitempty"`
	Node string    `json:"node,omitempty"`
	// CoolDownLeft is how long the cool-down still holds (LimitCoolDown).
	CoolDownLeft time.Duration `json:"coolDownLeft,omitempty"`
	// Other is the job the limit is about (LimitFairShare), and
	// OtherFulfillment its fulfillment after the plan.
	Other            string  `json:"other,omitempty"`
	OtherFulfillment float64 `json:"otherFulfillment,omitempty"`
	// Pods are the pods the job yields to (LimitYieldedToPriority,
	// LimitYieldedToMinimum), as namespace/name, and PodPriority the
	// highest of their priorities.
	Pods        []string `json:"pods,omitempty"`
	PodPriority int32    `json:"podPriority,omitempty"`
}

// Limited reports whether something holds the job below what it asks for:
// every limit but growing and being at its max.
func (e *Explanation) Limited() bool { return e.Limit != LimitGrowing && e.Limit != LimitAtMax }
