package autoscaler

import (
	"time"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// priceOf fills what the planner prices a job's resizes with: whether its
// trainers restart on every resize (a PyTorch or Horovod job), the time of
// its last resize (last, the newer of status.lastScale and the record on
// its trainer ReplicaSet: [lastScaleOf]), its cost as the controller
// measured it (status.resize.lastCost: from the resize until every trainer
// pod was Ready again) and the floor its spec sets.
func priceOf(job *planner.Job, tj *v1.TrainingJob, last *v1.ScaleRecord) {
	if frameworks.Training(&tj.Spec) == nil {
		return
	}
	job.RestartsOnResize = true
	if last != nil {
		job.LastResize = last.Time.Time
	}
	if c := tj.Status.Resize.LastCost; c != nil {
		job.ResizeCost = c.Duration
	}
	job.MinResizeInterval = time.Duration(tj.Spec.Elastic().ResizeCooldown()) * time.Second
}

// growMargin is Config.GrowMargin as the planner takes it.
func growMargin(m float64) float64 {
	switch {
	case m == 0:
		return planner.DefaultGrowMargin
	case m < 0:
		return 0
	}
	return m
}
