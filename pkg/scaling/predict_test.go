package scaling

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// measuredUpTo4 is a job measured up to 4 trainers, which scales less
// than perfectly (an all-reduce, a constant part of the gradient time).
var measuredUpTo4 = Model{Params: syncBound, MaxTrainers: 4, Measurements: 10}

// TestPredictPrior pins the prior's rules for a job measured up to N = 4
// trainers, at a global batch of 256 samples.
func TestPredictPrior(t *testing.T) {
	const batch = 256
	m := measuredUpTo4
	one := m.Throughput(1, 1, batch)
	tests := []struct {
		name            string
		trainers, nodes int
		wantThroughput  float64
		wantBasis       Basis
	}{
		{"one trainer: the model", 1, 1, one, Fitted},
		{"the largest size measured: the model", 4, 1, m.Throughput(4, 1, batch), Fitted},
		{"a size measured across nodes: the model", 4, 2, m.Throughput(4, 2, batch), Fitted},
		{"one above N: perfect scaling from N", 5, 1, m.Throughput(4, 1, batch) * 5 / 4, Optimistic},
		{"across nodes: perfect scaling from N on as many nodes", 6, 2, m.Throughput(4, 2, batch) * 6 / 4, Optimistic},
		{"more nodes than N spans: from N on N nodes", 8, 8, m.Throughput(4, 4, batch) * 2, Optimistic},
		{"twice N: still perfect scaling", 8, 1, m.Throughput(4, 1, batch) * 2, Optimistic},
		{"beyond twice N: what twice N gets", 9, 1, m.Throughput(4, 1, batch) * 2, Capped},
		{"far beyond: what twice N gets", 64, 16, m.Throughput(4, 4, batch) * 2, Capped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.Predict(tt.trainers, tt.nodes, batch)
			assert.Equal(t, tt.wantBasis, got.Basis)
			assert.InEpsilon(t, tt.wantThroughput, got.Throughput, 1e-12)
			assert.InEpsilon(t, tt.wantThroughput/one, got.Speedup, 1e-12)
		})
	}
	assert.Equal(t, 8, m.OptimisticUpTo())
}

// TestPredictUnmeasured: a job measured at no size is predicted to gain
// equally from every trainer, and says so.
func TestPredictUnmeasured(t *testing.T) {
	for _, trainers := range []int{1, 2, 7, 64} {
		got := Model{}.Predict(trainers, 2, 512)
		assert.Equal(t, Prediction{Speedup: float64(trainers), Basis: Unmeasured}, got, "%d trainers", trainers)
	}
	assert.Equal(t, Prediction{Basis: Unmeasured}, Model{}.Predict(-1, 1, 512))
	assert.Equal(t, 0, Model{}.OptimisticUpTo())
	assert.Equal(t, "unmeasured", Model{}.Predict(3, 1, 512).Basis.String())
}

// TestPredictNothingToPredict: no trainer or no batch predicts nothing.
func TestPredictNothingToPredict(t *testing.T) {
	for _, tt := range []struct {
		trainers int
		batch    float64
	}{{0, 256}, {-2, 256}, {2, 0}, {2, -1}} {
		assert.Equal(t, Prediction{Basis: Fitted}, measuredUpTo4.Predict(tt.trainers, 1, tt.batch), "%+v", tt)
	}
}

// TestPredictOneMeasurement: a job measured once, at one trainer, is
// predicted to double at two and to gain nothing more until it has run
// there.
func TestPredictOneMeasurement(t *testing.T) {
	model, err := Fit([]Measurement{{Trainers: 1, Nodes: 1, LocalBatch: 64, StepTime: 0.5}})
	require.NoError(t, err)
	assert.InEpsilon(t, 64/0.5, model.Predict(1, 1, 64).Throughput, 1e-9)
	two := model.Predict(2, 1, 64)
	assert.Equal(t, Optimistic, two.Basis)
	assert.InEpsilon(t, 2, two.Speedup, 1e-9)
	three := model.Predict(3, 1, 64)
	assert.Equal(t, Capped, three.Basis)
	assert.InEpsilon(t, 2, three.Speedup, 1e-9)
}

// TestPredictIsOptimistic: for random models, sizes and batches, the
// prior never predicts less than the fitted model, nor less with another
// trainer on the same nodes above N.
func TestPredictIsOptimistic(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for i := range 200 {
		m := Model{MaxTrainers: 1 + rng.Intn(16), Params: Params{
			GradBase: rng.Float64(), GradPerSample: rng.Float64() / 100,
			SyncLocalBase: rng.Float64(), SyncLocalPerReplica: rng.Float64() / 10,
			SyncNetBase: rng.Float64(), SyncNetPerReplica: rng.Float64() / 10,
			Overlap: MinOverlap + (MaxOverlap-MinOverlap)*rng.Float64(),
		}}
		batch := float64(1 + rng.Intn(4096))
		nodes := 1 + rng.Intn(8)
		prev := m.Predict(m.MaxTrainers, nodes, batch)
		for trainers := m.MaxTrainers + 1; trainers <= 3*m.MaxTrainers; trainers++ {
			got := m.Predict(trainers, nodes, batch)
			if got.Basis == Optimistic {
				assert.GreaterOrEqual(t, got.Throughput, m.Throughput(trainers, min(nodes, trainers), batch)*(1-1e-12),
					"case %d: %d trainers on %d nodes, batch %g", i, trainers, nodes, batch)
			}
			assert.GreaterOrEqual(t, got.Throughput, prev.Throughput*(1-1e-12), "case %d: %d trainers", i, trainers)
			prev = got
		}
	}
}

// TestBasisString names every basis.
func TestBasisString(t *testing.T) {
	assert.Equal(t, []string{"unmeasured", "fitted", "optimistic", "capped", "unknown"},
		[]string{Unmeasured.String(), Fitted.String(), Optimistic.String(), Capped.String(), Basis(9).String()})
}
