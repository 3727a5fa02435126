package v1

// The condition types of a TrainingJob's status.
const (
	// ConditionReady is True while the job is Running.
	ConditionReady = "Ready"
	// ConditionBlocked is True while an object the job needs exists and is
	// controlled by something else.
	ConditionBlocked = "Blocked"
	// ConditionComplete is True once a trainer exited 0.
	ConditionComplete = "Complete"
	// ConditionFailed is True once the job failed.
	ConditionFailed = "Failed"
	// ConditionQueued is True while the job waits for admission (its
	// ReplicaSets are held at 0 replicas, their templates gated with
	// SchedulingGateAdmission), with what kind of wait in the reason and its
	// position and what it waits for in the message; False once admitted. A job without it was never
	// queued: it was stored before gang admission, or with it turned off.
	ConditionQueued = "Queued"
	// ConditionSuspended is True while spec.suspend holds the job's pods at
	// zero (ReasonSuspended); once it was set, it turns False (ReasonResumed)
	// when spec.suspend is cleared and the job returns to the queue.
	ConditionSuspended = "Suspended"
	// ConditionPreempted is True while the job, stopped whole to make room for
	// a queued job of a higher priority, waits in the queue to start again
	// (ReasonPreempted; the message names the preemptor and its priority).
	// It turns False (ReasonReadmitted) when the job is admitted again.
	ConditionPreempted = "Preempted"
	// ConditionChildrenAccepted is False while the API server refuses an
	// object the job needs: the create or patch of one of its ReplicaSets or
	// Services, or a pod one of its ReplicaSets creates (the ReplicaSet's
	// ReplicaFailure condition). It appears with the first refusal; its
	// reason names the kind of refusal (ReasonInvalid, ReasonForbidden,
	// ReasonQuotaExceeded, ReasonBadRequest, ReasonRefused), and it turns
	// True (ReasonAccepted) once nothing is refused.
	ConditionChildrenAccepted = "ChildrenAccepted"
	// ConditionRoleFailing is True while a master or pserver pod of a
	// fault-tolerant job is not ready after its container exited non-zero
	// (ReasonMasterFailing, ReasonPserverFailing); once it was set, it turns
	// False (ReasonNoRoleFailing) when no such pod is left.
	ConditionRoleFailing = "RoleFailing"
	// ConditionScaling is the autoscaler's: its reason is what limits the
	// job's trainers after the last plan (one of the Scaling* reasons), its
	// message the numbers behind it. It is True while the job gets all the
	// trainers it may have (it grows, or it is at its max), False while
	// something holds it below its max. Only the autoscaler writes it, and
	// only when the reason or the message changes.
	ConditionScaling = "Scaling"
)

// The reasons of the Scaling condition: what limits an elastic job's
// trainers. Each is one cause of the autoscaler's closed set
// (docs/kubectl-edl.md, "The limits, one by one").
const (
	ScalingAtMax             = "AtMax"
	ScalingAtMin             = "AtMin"
	ScalingGrowing           = "Growing"
	ScalingNoRoom            = "NoRoom"
	ScalingNoEligibleNode    = "NoEligibleNode"
	ScalingLoad              = "Load"
	ScalingFairShare         = "FairShare"
	ScalingCoolDown          = "CoolDown"
	ScalingSettling          = "Settling"
	ScalingYieldedToPriority = "YieldedToPriority"
	ScalingYieldedToMinimum  = "YieldedToMinimum"
	ScalingQuota             = "Quota"
	ScalingNotElastic        = "NotElastic"
	ScalingNotRunning        = "NotRunning"
	ScalingDryRun            = "DryRun"
	ScalingNoGain            = "NoGain"
)

// The reasons of a TrainingJob's phase, in status.reason and its conditions.
const (
	ReasonCreating        = "Creating"
	ReasonPodsStarting    = "PodsStarting"
	ReasonUnschedulable   = "Unschedulable"
	ReasonRunning         = "Running"
	ReasonBlocked         = "ObjectInTheWay"
	ReasonNotBlocked      = "NothingInTheWay"
	ReasonInvalid         = "Invalid"
	ReasonSucceeded       = "TrainerSucceeded"
	ReasonTrainerFailed   = "TrainerFailed"
	ReasonPserverFailed   = "PserverFailed"
	ReasonTooManyRestarts = "TooManyRestarts"
	// ReasonWaitingForAdmission: the job is queued (phase and condition
	// Queued).
	ReasonWaitingForAdmission = "WaitingForAdmission"
	// ReasonAdmitted: the autoscaler admitted the job (condition Queued
	// False).
	ReasonAdmitted = "Admitted"
	// ReasonNotStarted: the job was admitted, but its minimum was not all
	// running within the start deadline, so the autoscaler sent it back to
	// the queue (condition Queued True; the message says what never started
	// and why, and when it may be admitted again, or that it no longer will
	// be after the last try).
	ReasonNotStarted = "NotStarted"
	// ReasonWaitingForQuota: the job is queued and its namespace's
	// ResourceQuota leaves too little for its minimum now (condition Queued
	// True; the message names the quota and the shortfall).
	ReasonWaitingForQuota = "WaitingForQuota"
	// ReasonExceedsQuota: the job is queued and its minimum exceeds the hard
	// limit of a ResourceQuota of its namespace, so it cannot start until the
	// quota is raised (condition Queued True). It holds no place that would
	// delay the jobs behind it.
	ReasonExceedsQuota = "ExceedsQuota"
	// ReasonUnplaceable: the job is queued and a pod of its minimum fits no
	// node it may use even with the node empty (condition Queued True). Like
	// ReasonExceedsQuota, it delays no job behind it.
	ReasonUnplaceable = "Unplaceable"
	// ReasonWillBeRefused: the job is queued and the API server would
	// refuse a pod of its minimum whatever the room — a ResourceQuota
	// tracks a request or limit a container does not state, or a
	// LimitRange's min, max or maxLimitRequestRatio rules it out (condition
	// Queued True; the message names the role, the field and the quota or
	// LimitRange). Like ReasonExceedsQuota, it delays no job behind it.
	ReasonWillBeRefused = "WillBeRefused"
	// ReasonReservedForHead: the job is queued and its minimum would fit,
	// but only in room reserved for the job at the head of the queue
	// (condition Queued True).
	ReasonReservedForHead = "ReservedForHead"
	// ReasonSuspended: spec.suspend is true (phase Suspended, condition
	// Suspended True).
	ReasonSuspended = "Suspended"
	// ReasonResumed: spec.suspend was cleared; the job is back in the queue
	// (condition Suspended False).
	ReasonResumed = "Resumed"
	// ReasonPreempted: the job was stopped whole for a queued job of a higher
	// priority and waits in the queue (condition Preempted True, and the
	// phase's and the condition Queued's reason while it waits).
	ReasonPreempted = "Preempted"
	// ReasonReadmitted: a preempted job was admitted again (condition
	// Preempted False).
	ReasonReadmitted = "Readmitted"
	// ReasonAdmissionOff: the job was queued when gang admission was turned
	// off; it was released without waiting (condition Queued False).
	ReasonAdmissionOff = "AdmissionOff"
	// ReasonChildRefused: the job is Pending because the API server refuses
	// one of its objects or their pods; see ConditionChildrenAccepted.
	ReasonChildRefused   = "ChildRefused"
	ReasonMasterFailing  = "MasterFailing"
	ReasonPserverFailing = "PserverFailing"
	ReasonNoRoleFailing  = "NoRoleFailing"
)

// The reasons of the ChildrenAccepted condition: the kinds of refusal, by
// the API server's answer. ReasonInvalid (the object breaks a rule of the
// API server's) is one of them too.
const (
	ReasonAccepted      = "Accepted"
	ReasonForbidden     = "Forbidden"     // an admission policy, a webhook, RBAC, a terminating namespace
	ReasonQuotaExceeded = "QuotaExceeded" // a ResourceQuota
	ReasonBadRequest    = "BadRequest"    // e.g. a webhook's denial without a code of its own
	ReasonRefused       = "Refused"       // any other refusal
)

// The reasons of the events recorded on a TrainingJob; each marks an edge,
// never a sync. A job whose spec breaks a rule gets an event of reason
// ReasonInvalid.
const (
	EventCreated   = "Created"
	EventScaled    = "Scaled"
	EventRunning   = "Running"
	EventSucceeded = "Succeeded"
	EventFailed    = "Failed"
	EventBlocked   = "Blocked"
	// EventBadProgress: the training wrote a progress report that cannot
	// be read (the message names the key); Warning.
	EventBadProgress = "BadProgress"
	// EventAdmitted: the autoscaler admitted a queued job.
	EventAdmitted = "Admitted"
	// EventRequeued: the autoscaler sent an admitted job that did not start
	// within the start deadline back to the queue.
	EventRequeued = "Requeued"
	// EventPreempted: the autoscaler stopped the job whole for a queued job
	// of a higher priority (names the preemptor and its priority); Warning.
	EventPreempted = "Preempted"
	// EventSuspended and EventResumed mark spec.suspend being set and cleared.
	EventSuspended = "Suspended"
	EventResumed   = "Resumed"
	// EventRefused names a refused object and the server's message, once per
	// distinct refusal.
	EventRefused = "Refused"
	// EventRoleFailing names a failing master or pserver pod and its last exit.
	EventRoleFailing = "RoleFailing"
	// EventHostsNotUpdated: a Horovod job's scale-down went ahead without
	// its host-discovery ConfigMap dropping the trainers it removes (the
	// controller did not write it in time); Warning.
	EventHostsNotUpdated = "HostsNotUpdated"
)
