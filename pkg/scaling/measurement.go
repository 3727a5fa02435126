package scaling

import (
	"fmt"
	"math"
)

// Measurement is a job's step time measured at one size: Trainers
// data-parallel replicas (one GPU each) spread over Nodes nodes, each
// computing the gradient of LocalBatch samples a step.
type Measurement struct {
	// Trainers is the number of replicas, at least 1.
	Trainers int
	// Nodes is the number of nodes the replicas span, from 1 to Trainers.
	Nodes int
	// LocalBatch is each replica's samples a step, above 0.
	LocalBatch float64
	// StepTime is the seconds of a step, above 0.
	StepTime float64
	// SyncTime is the part of StepTime spent synchronising the gradients
	// rather than computing them — waiting on the all-reduce once the
	// backward pass is done, or a step's time less that of a step without
	// synchronisation — in seconds, when the training knows it; 0 when it
	// does not, and the fit then uses only the step time.
	SyncTime float64
}

// validate returns what makes the measurement unusable, naming the field.
func (m Measurement) validate() error {
	switch {
	case m.Trainers < 1:
		return fmt.Errorf("field Trainers is %d: must be at least 1", m.Trainers)
	case m.Nodes < 1 || m.Nodes > m.Trainers:
		return fmt.Errorf("field Nodes is %d: must be from 1 to Trainers (%d)", m.Nodes, m.Trainers)
	case !positive(m.LocalBatch):
		return fmt.Errorf("field LocalBatch is %g: must be above 0", m.LocalBatch)
	case !positive(m.StepTime):
		return fmt.Errorf("field StepTime is %g s: must be above 0", m.StepTime)
	case m.SyncTime < 0 || math.IsNaN(m.SyncTime):
		return fmt.Errorf("field SyncTime is %g s: must be 0 (unknown) or above", m.SyncTime)
	case m.SyncTime >= m.StepTime:
		return fmt.Errorf("field SyncTime is %g s: must be below StepTime (%g s), which includes it", m.SyncTime, m.StepTime)
	}
	return nil
}

// gradTime is the gradient computation's part of the step, and whether
// the measurement tells it: the step less its synchronisation, or the
// whole step for one replica, which has nothing to synchronise.
func (m Measurement) gradTime() (float64, bool) {
	switch {
	case m.SyncTime > 0:
		return m.StepTime - m.SyncTime, true
	case m.Trainers == 1:
		return m.StepTime, true
	}
	return 0, false
}

// positive reports whether v is a finite number above 0.
func positive(v float64) bool {
	return v > 0 && !math.IsInf(v, 1)
}
