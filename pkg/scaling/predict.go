package scaling

// Basis says what a [Prediction] rests on.
type Basis int

const (
	// Unmeasured: the job was measured at no size, so every trainer is
	// taken to help equally (EDL's treatment of a job that reports
	// nothing); the throughput is unknown.
	Unmeasured Basis = iota
	// Fitted: the size is at most the largest measured, where the fitted
	// model holds.
	Fitted
	// Optimistic: the size is above the largest measured and at most twice
	// it, where the prior assumes perfect scaling from the largest size.
	Optimistic
	// Capped: the size is beyond twice the largest measured, where nothing
	// is assumed: the prediction stays at twice's.
	Capped
)

// String is the basis as explain shows it.
func (b Basis) String() string {
	switch b {
	case Unmeasured:
		return "unmeasured"
	case Fitted:
		return "fitted"
	case Optimistic:
		return "optimistic"
	case Capped:
		return "capped"
	}
	return "unknown"
}

// Prediction is a job's predicted throughput at one size.
type Prediction struct {
	// Throughput is in samples per second; 0 when the job is Unmeasured.
	Throughput float64
	// Speedup is the throughput relative to one trainer's at the same
	// global batch: the trainers themselves when the job is Unmeasured.
	Speedup float64
	// Basis says what the prediction rests on.
	Basis Basis
}

// OptimisticUpTo is the largest size the optimistic prior covers, twice
// the largest measured: 0 when the model is not [Model.Measured].
func (m Model) OptimisticUpTo() int {
	return 2 * m.MaxTrainers
}

// Predict is the job's throughput at trainers replicas over nodes nodes
// sharing a global batch of globalBatch samples a step, with AdaptDL's
// optimistic prior for the sizes not measured. With N the largest size
// measured:
//
//   - up to N, the fitted model ([Model.Throughput]);
//   - above N, up to 2N, perfect scaling from N: each trainer adds the
//     mean trainer's throughput at N (on as many of the nodes as N
//     trainers can span), as if the synchronisation grew no slower, which
//     is never below the model;
//   - beyond 2N, what 2N gets: a trainer is not predicted to help until
//     the job has run at a larger size, much as AdaptDL never gives a job
//     more than twice the replicas it has measured;
//   - without a measurement, every trainer helps equally: the speedup is
//     the trainers and the throughput unknown.
//
// The prior makes a planner try a larger size once, the only way to learn
// how it scales; a job that scales badly gains little from it, since its
// mean trainer at N adds little. Fewer than one trainer, or a global batch
// not above 0, predict nothing.
func (m Model) Predict(trainers, nodes int, globalBatch float64) Prediction {
	if !m.Measured() {
		return Prediction{Speedup: float64(max(trainers, 0)), Basis: Unmeasured}
	}
	if trainers < 1 || !(globalBatch > 0) {
		return Prediction{Basis: Fitted}
	}
	one := m.Throughput(1, 1, globalBatch)
	n := m.MaxTrainers
	var p Prediction
	switch {
	case trainers <= n:
		p = Prediction{Throughput: m.Throughput(trainers, nodes, globalBatch), Basis: Fitted}
	case trainers <= 2*n:
		anchor := m.Throughput(n, min(max(nodes, 1), n), globalBatch)
		p = Prediction{Throughput: anchor * float64(trainers) / float64(n), Basis: Optimistic}
	default:
		anchor := m.Throughput(n, min(max(nodes, 1), n), globalBatch)
		p = Prediction{Throughput: 2 * anchor, Basis: Capped}
	}
	if one > 0 {
		p.Speedup = p.Throughput / one
	}
	return p
}
