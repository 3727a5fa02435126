package autoscaler

import (
	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// leavesFirst: the job's trainers leave its host-discovery file before their
// pods go (a Horovod job), in et-operator's order: a scale-down names and
// marks the trainers it removes (planner.Job.NamesRemovals) and leaves the
// replicas to the controller, which lowers them once the master pods have
// the list without them ([Autoscaler.apply]).
func leavesFirst(job *v1.TrainingJob) bool {
	tr := frameworks.Training(&job.Spec)
	return tr != nil && tr.LeavesFirst
}
