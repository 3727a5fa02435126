package planner

import (
	"fmt"
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// Queue is what gang admission decides on: the jobs that wait, and the
// running jobs that a queued job of a higher priority may stop whole.
type Queue struct {
	// Jobs wait for admission.
	Jobs []QueuedJob
	// Starting are jobs an earlier plan admitted whose minimum's pods are
	// not all created yet, with only the pods that are missing: their room
	// is kept, like that of pods the scheduler has not tried.
	Starting []QueuedJob
	// Running are the admitted jobs that hold pods (Creating or Running),
	// which preemption may stop whole (Options.Preemption); their pods are
	// the snapshot's Trainers and Servers.
	Running []RunningJob
	// Arriving are the elastic jobs admitted and not Running yet (their
	// pods exist or are being created): growth keeps the room they could
	// use (Options.CoolDown, [plan.arrive]).
	Arriving []ArrivingJob
}

// ArrivingJob is an elastic job an earlier plan admitted that is not Running
// yet, as growth sees it: one trainer's request and where trainers may run.
type ArrivingJob struct {
	// Key is "namespace/name".
	Key string
	// Priority is the job's pod priority.
	Priority int32
	// Min and Max are the trainer's min-instance and max-instance.
	Min, Max int32
	// Admitted is when a plan admitted it (its Queued condition's last
	// transition).
	Admitted time.Time
	// Request and Limits are one trainer's, as in Job.
	Request, Limits Resources
	Placement       *snapshot.Placement
}

// RunningJob is an admitted job, as preemption sees it.
type RunningJob struct {
	// Key is "namespace/name".
	Key string
	// Priority is the job's pod priority.
	Priority int32
	// Created is the job's creationTimestamp: of equal priorities, the
	// newest job is stopped first.
	Created time.Time
	// MinPods is how many pods a job in phase Running has bound at least:
	// its minimum trainers and pservers (0 for a job not Running yet). A
	// Running job the snapshot holds fewer of is one whose pods the pod
	// informer has not delivered yet — the job informer can report a job
	// Running before — and preemption waits a plan for them rather than
	// stop another job in its place.
	MinPods int32
}

// QueuedJob is a TrainingJob that waits for admission: its ReplicaSets
// exist at 0 replicas, so it holds no node and no quota. The caller fills
// it from the job and its ReplicaSets' templates.
type QueuedJob struct {
	// Key is "namespace/name".
	Key string
	// Priority is the job's pod priority, resolved from its priorityClassName.
	Priority int32
	// Created is when the job last entered the queue (created, resumed or
	// preempted; the caller reads its Queued condition): of equal
	// priorities, the job that has waited longest is admitted first.
	Created time.Time
	// Pods are the job's minimum: its master, its pservers and min-instance
	// trainers. The job is admitted only when all of them fit at once.
	Pods []PodSet
	// MaxTrainers is the trainers' max-instance: growth keeps room for the
	// share of a job it admits ([plan.arrive]).
	MaxTrainers int32
	// UncountedQuota, when set, names a ResourceQuota the snapshot does not
	// count — a scoped one (scopes or a scope selector matching its pods),
	// or an unscoped one's extended resources — that cannot hold the
	// minimum now, or, with UncountedQuotaHard, even at its hard limit. The
	// caller reads them; the snapshot's Quotas are the rest.
	UncountedQuota     string
	UncountedQuotaHard bool
}

// PodSet is Count pods of one role of a queued job, each requesting Request
// with Limits (as admission will leave them) and restricted to Placement.
type PodSet struct {
	// Role names the pods in reasons: "master", "pserver" or "trainer".
	Role            string
	Count           int32
	Request, Limits Resources
	Placement       *snapshot.Placement
	// Refused, when set, is why the API server will refuse these pods
	// whatever the room (a quota tracking a request they do not state, a
	// LimitRange bound): the job waits, holding nothing.
	Refused string
}

// refused is why the API server will refuse a pod of q's minimum, naming
// the role; "" when it will not.
func refused(q *QueuedJob) string {
	for _, ps := range q.Pods {
		if ps.Refused != "" {
			return fmt.Sprintf("the API server would refuse its %s pods: %s", ps.Role, ps.Refused)
		}
	}
	return ""
}

// Admission is a queued job the plan admits: its whole minimum fits.
type Admission struct {
	Job string
	// Reason says what the minimum needs and how it fits.
	Reason string
}

// Waiting is a queued job the plan does not admit, with its place in the
// queue (1-based, of Of queued jobs) and what it waits for.
type Waiting struct {
	Job          string
	Position, Of int
	// Kind is what kind of wait, the reason of the job's Queued condition:
	// v1.ReasonWaitingForAdmission (room on nodes), ReasonWaitingForQuota,
	// ReasonExceedsQuota, ReasonUnplaceable, ReasonWillBeRefused or
	// ReasonReservedForHead.
	Kind   string
	Reason string
	// Head is set on the job the plan keeps room for: the first in the
	// queue that waits for room on nodes.
	Head bool
}

// Preemption is a running job the plan stops whole so that a queued job of
// a higher priority fits.
type Preemption struct {
	Job      string
	Priority int32
	// By is the queued job it is stopped for, of priority ByPriority.
	By         string
	ByPriority int32
	Reason     string
}
