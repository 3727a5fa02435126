package frameworks

import (
	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/framework"
	"github.com/paddlepaddle/edl/pkg/framework/horovod"
	"github.com/paddlepaddle/edl/pkg/framework/paddle"
	"github.com/paddlepaddle/edl/pkg/framework/pytorch"
)

var all = map[v1.Framework]framework.Framework{
	v1.FrameworkPaddlePaddle: paddle.Framework{},
	v1.FrameworkPyTorch:      pytorch.Framework{},
	v1.FrameworkHorovod:      horovod.Framework{},
}

// For is the framework of a job's spec (after defaulting); a job of an
// unknown framework, which validation refuses, gets PaddlePaddle's.
func For(spec *v1.TrainingJobSpec) framework.Framework {
	if f, ok := all[spec.FrameworkOrDefault()]; ok {
		return f
	}
	return paddle.Framework{}
}

// Training is the job's framework's [framework.Training]: nil for a
// PaddlePaddle job.
func Training(spec *v1.TrainingJobSpec) *framework.Training { return For(spec).Training() }

// LeavesFirst reports whether the job's trainers leave its host list before
// their pods go (a Horovod job, in et-operator's order): a scale-down names
// and marks the trainers it removes, and the controller lowers the
// replicas once the master pods have the list without them.
func LeavesFirst(spec *v1.TrainingJobSpec) bool {
	tr := Training(spec)
	return tr != nil && tr.LeavesFirst
}
