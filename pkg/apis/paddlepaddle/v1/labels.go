package v1

// The pod labels of the original EDL; each selects one role of one job, and
// its value is the job's name.
const (
	LabelTrainer = "paddle-job"
	LabelPserver = "paddle-job-pserver"
	LabelMaster  = "paddle-job-master"
)

// AnnotationDeletionCost is the ReplicaSet controller's pod-deletion-cost:
// on a scale-down it deletes pods of lower cost first. The controller sets it
// on trainers; the pod informer's transform keeps it.
const AnnotationDeletionCost = "controller.kubernetes.io/pod-deletion-cost"
