package scaling

import "math"

// Params are the parameters of the step-time model (see the package
// documentation): the gradient computation's, the synchronisation's on one
// node and across nodes, and the overlap of the two. Times are in seconds;
// every parameter is non-negative and Overlap lies in [MinOverlap,
// MaxOverlap].
type Params struct {
	// GradBase is α_g, the part of the gradient computation that does not
	// depend on the local batch (launching kernels, the optimizer step).
	GradBase float64
	// GradPerSample is β_g, the seconds each sample of the local batch adds.
	GradPerSample float64
	// SyncLocalBase is α_r, the all-reduce's time when every replica is on
	// one node and there are two of them.
	SyncLocalBase float64
	// SyncLocalPerReplica is β_r, what each replica beyond two adds to the
	// all-reduce on one node.
	SyncLocalPerReplica float64
	// SyncNetBase is α_n, the all-reduce's time when the replicas span nodes
	// and there are two of them: the slowest link decides.
	SyncNetBase float64
	// SyncNetPerReplica is β_n, what each replica beyond two adds to the
	// all-reduce across nodes.
	SyncNetPerReplica float64
	// Overlap is γ, how much of the synchronisation hides behind the
	// computation: 1 for none (the step is their sum), and the step nears
	// the larger of the two as γ grows.
	Overlap float64
}

// MinOverlap and MaxOverlap bound [Params.Overlap]: at 1 computation and
// synchronisation add up; at 10 the step is at most 7.2% above the larger
// of the two, as close to full overlap as a measurement tells.
const (
	MinOverlap = 1
	MaxOverlap = 10
)

// Model predicts a job's step time and throughput at any size from its
// measurements; [Fit] makes one. The zero Model is the model of a job
// measured at no size: it knows nothing but that every trainer helps
// equally, which [Model.Predict] says.
type Model struct {
	// Params are the fitted parameters.
	Params Params
	// MaxTrainers is the largest number of trainers measured, 0 for none.
	// The model is fitted on sizes up to it; [Model.Predict] applies the
	// optimistic prior above it.
	MaxTrainers int
	// Measurements is how many measurements the fit used.
	Measurements int
	// FitError is the root mean square of the relative error of the fitted
	// step time over the measurements: 0.05 means the model is typically
	// within 5% of the step times it was fitted on.
	FitError float64
}

// Measured reports whether the model rests on at least one measurement.
// Without one, its step time and throughput are unknown (0) and
// [Model.Predict] assumes that every trainer helps equally.
func (m Model) Measured() bool {
	return m.MaxTrainers > 0
}

// StepTime is the fitted time of one step, in seconds, of trainers
// replicas spread over nodes nodes with localBatch samples each. It is 0
// for a model that is not [Model.Measured] and for fewer than one trainer.
// Nodes below 1 count as one node.
func (m Model) StepTime(trainers, nodes int, localBatch float64) float64 {
	if !m.Measured() || trainers < 1 {
		return 0
	}
	p := m.Params
	grad := p.GradBase + p.GradPerSample*math.Max(localBatch, 0)
	return combine(grad, p.syncTime(trainers, nodes), p.Overlap)
}

// Throughput is the fitted throughput, in samples per second, of trainers
// replicas spread over nodes nodes sharing a global batch of globalBatch
// samples a step: each trainer takes globalBatch/trainers of it, as EDL's
// example trainer splits its chunks (a share rounded up by a sample is
// ignored). It is 0 when [Model.StepTime] is.
func (m Model) Throughput(trainers, nodes int, globalBatch float64) float64 {
	if trainers < 1 {
		return 0
	}
	step := m.StepTime(trainers, nodes, globalBatch/float64(trainers))
	if step <= 0 {
		return 0
	}
	return globalBatch / step
}

// syncTime is T_sync: nothing for one replica; otherwise the base of the
// slowest link the replicas use (the network when they span nodes) plus
// its retrogression for each replica beyond two, as a ring all-reduce
// takes a round per replica.
func (p Params) syncTime(trainers, nodes int) float64 {
	beyondTwo := float64(max(trainers-2, 0))
	switch {
	case trainers <= 1:
		return 0
	case nodes > 1:
		return p.SyncNetBase + p.SyncNetPerReplica*beyondTwo
	default:
		return p.SyncLocalBase + p.SyncLocalPerReplica*beyondTwo
	}
}

// combine is (grad^γ + sync^γ)^(1/γ), computed without overflow.
func combine(grad, sync, gamma float64) float64 {
	hi, lo := math.Max(grad, sync), math.Min(grad, sync)
	if lo <= 0 || hi <= 0 {
		return hi
	}
	return hi * math.Pow(1+math.Pow(lo/hi, gamma), 1/gamma)
}
