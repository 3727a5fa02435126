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
// (docs/autoscaler.md, "Why a job has the trainers it has").
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
)
