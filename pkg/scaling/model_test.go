package scaling

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepTime pins the model's shape: the gradient time alone for one
// replica, the link its replicas use, and the overlap between a sum and a
// maximum.
func TestStepTime(t *testing.T) {
	p := Params{GradBase: 0.1, GradPerSample: 0.01, SyncLocalBase: 0.2, SyncLocalPerReplica: 0.01,
		SyncNetBase: 0.4, SyncNetPerReplica: 0.05, Overlap: 1}
	model := func(mutate func(*Params)) Model {
		q := p
		if mutate != nil {
			mutate(&q)
		}
		return Model{Params: q, MaxTrainers: 4}
	}
	tests := []struct {
		name                    string
		model                   Model
		trainers, nodes         int
		localBatch, wantSeconds float64
	}{
		{"one replica: only the gradient", model(nil), 1, 1, 10, 0.2},
		{"one replica says nothing of nodes", model(nil), 1, 3, 10, 0.2},
		{"two replicas on a node: the node's base", model(nil), 2, 1, 10, 0.2 + 0.2},
		{"six replicas on a node: four rounds of retrogression", model(nil), 6, 1, 10, 0.2 + 0.2 + 4*0.01},
		{"six replicas on two nodes: the network", model(nil), 6, 2, 10, 0.2 + 0.4 + 4*0.05},
		{"nodes below one count as one", model(nil), 2, 0, 10, 0.4},
		{"no overlap adds up", model(nil), 2, 2, 0, 0.1 + 0.4},
		{"overlap 2 is the Euclidean norm", model(func(q *Params) { q.Overlap = 2 }), 2, 2, 20, 0.5},
		{"full overlap nears the larger", model(func(q *Params) { q.Overlap = MaxOverlap }), 2, 2, 0, 0.4 * math.Pow(1+math.Pow(0.25, 10), 0.1)},
		{"a negative batch counts as none", model(nil), 1, 1, -5, 0.1},
		{"no trainer, no step", model(nil), 0, 1, 10, 0},
		{"unmeasured, no step", Model{Params: p}, 2, 1, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.wantSeconds, tt.model.StepTime(tt.trainers, tt.nodes, tt.localBatch), 1e-12)
		})
	}
}

// TestThroughput: the global batch is split evenly over the trainers,
// and the throughput is the global batch over the step time.
func TestThroughput(t *testing.T) {
	m := Model{Params: Params{GradBase: 0.1, GradPerSample: 0.01, SyncLocalBase: 0.1, Overlap: 1}, MaxTrainers: 2}
	assert.InDelta(t, 64/(0.1+0.01*64), m.Throughput(1, 1, 64), 1e-9)
	assert.InDelta(t, 64/(0.1+0.01*32+0.1), m.Throughput(2, 1, 64), 1e-9)
	assert.Zero(t, m.Throughput(0, 1, 64))
	assert.Zero(t, Model{}.Throughput(2, 1, 64))
}

// TestCombineDoesNotOverflow: the overlap's powers stay finite for times
// far from 1 s.
func TestCombineDoesNotOverflow(t *testing.T) {
	assert.InEpsilon(t, 2e-30*math.Pow(2, 0.1), combine(2e-30, 2e-30, 10), 1e-12)
	assert.InEpsilon(t, 1e40, combine(1e40, 1e20, 10), 1e-12)
	assert.Equal(t, 3.0, combine(0, 3, 5))
}

// TestLossGradient checks the loss's gradient against central
// differences at random parameters, every parameter free.
func TestLossGradient(t *testing.T) {
	ms := synthetic(syncBound, polluxSizes(), []float64{8, 32}, withNoise(0.1))
	ms[3].SyncTime = 0 // one size without its sync time
	o := newObjective(ms)
	o.free = []int{gradBase, gradPerSample, syncLocalBase, syncLocalPerReplica, syncNetBase, syncNetPerReplica, overlap}
	rng := rand.New(rand.NewSource(3))
	for i := range 10 {
		x := make([]float64, len(o.free))
		for j := range x {
			x[j] = -5 + 4*rng.Float64()
		}
		x[len(x)-1] = 4*rng.Float64() - 2
		grad := make([]float64, len(x))
		o.Grad(grad, x)
		for j := range x {
			const h = 1e-6
			up, down := append([]float64(nil), x...), append([]float64(nil), x...)
			up[j] += h
			down[j] -= h
			numeric := (o.Func(up) - o.Func(down)) / (2 * h)
			assert.InDelta(t, numeric, grad[j], 1e-6+1e-4*math.Abs(numeric), "case %d, parameter %d", i, o.free[j])
		}
	}
}

// TestSearchRoundTrip: the search's coordinates map back to the
// parameters they came from, the overlap within its bounds.
func TestSearchRoundTrip(t *testing.T) {
	o := &objective{free: []int{gradBase, syncNetPerReplica, overlap}}
	p := syncBound.vector()
	back := o.params(o.searchOf(p))
	for _, k := range o.free {
		require.InEpsilon(t, p[k], back[k], 1e-9, "parameter %d", k)
	}
	o.fixed[syncLocalBase] = 0.7
	assert.Equal(t, 0.7, o.params(o.searchOf(p))[syncLocalBase], "a fixed parameter keeps its value")
	for _, x := range []float64{-1e3, -30, 0, 30, 1e3} {
		g := o.params([]float64{0, 0, x})[overlap]
		assert.GreaterOrEqual(t, g, float64(MinOverlap))
		assert.LessOrEqual(t, g, float64(MaxOverlap))
	}
}
