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
	// ConditionQueued is True while the job waits for admission (its pods
	// carry SchedulingGateAdmission), with its position and what it waits
	// for in the message; False once admitted. A job without it was never
	// queued: it was stored before gang admission, or with it turned off.
	ConditionQueued = "Queued"
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
	// ReasonAdmissionOff: the job was queued when gang admission was turned
	// off; it was released without waiting (condition Queued False).
	ReasonAdmissionOff = "AdmissionOff"
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
	// EventAdmitted: the autoscaler admitted a queued job.
	EventAdmitted = "Admitted"
)
