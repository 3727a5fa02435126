package scaling

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Parameters of three kinds of job, for synthetic measurements.
var (
	// computeBound is a job whose all-reduce is small beside its gradient
	// and barely overlaps it.
	computeBound = Params{GradBase: 0.05, GradPerSample: 0.004, SyncLocalBase: 0.01,
		SyncLocalPerReplica: 0.001, SyncNetBase: 0.04, SyncNetPerReplica: 0.004, Overlap: 1.2}
	// syncBound is a job whose all-reduce across nodes outweighs its
	// gradient at a small batch and overlaps it well.
	syncBound = Params{GradBase: 0.02, GradPerSample: 0.001, SyncLocalBase: 0.03,
		SyncLocalPerReplica: 0.004, SyncNetBase: 0.2, SyncNetPerReplica: 0.02, Overlap: 3}
	// noRetrogression is a job whose all-reduce does not slow down with
	// more replicas, with no overlap at all.
	noRetrogression = Params{GradBase: 0.1, GradPerSample: 0.01, SyncLocalBase: 0.02,
		SyncNetBase: 0.08, Overlap: 1}
)

// size is where a job runs: trainers over nodes.
type size struct{ trainers, nodes int }

// polluxSizes are the sizes Pollux measured: every spread of 1 to 16
// replicas over 1 to 4 nodes of 4 GPUs, as evenly as they go.
func polluxSizes() []size {
	var sizes []size
	for nodes := 1; nodes <= 4; nodes++ {
		for trainers := nodes; trainers <= 4*nodes; trainers++ {
			sizes = append(sizes, size{trainers, nodes})
		}
	}
	return sizes
}

// option changes a synthetic measurement.
type option func(*Measurement, *rand.Rand)

// withoutSync leaves the sync time unknown.
func withoutSync(m *Measurement, _ *rand.Rand) { m.SyncTime = 0 }

// withNoise multiplies the step time and its sync part by a factor within
// ±spread.
func withNoise(spread float64) option {
	return func(m *Measurement, rng *rand.Rand) {
		f := 1 + spread*(2*rng.Float64()-1)
		m.StepTime *= f
		m.SyncTime *= f
	}
}

// synthetic measures a job of parameters p at each size and local batch:
// the step time, and the part of it the synchronisation adds to the
// gradient computation.
func synthetic(p Params, sizes []size, batches []float64, opts ...option) []Measurement {
	rng := rand.New(rand.NewSource(1))
	var ms []Measurement
	for _, s := range sizes {
		for _, b := range batches {
			grad := p.GradBase + p.GradPerSample*b
			step := combine(grad, p.syncTime(s.trainers, s.nodes), p.Overlap)
			m := Measurement{Trainers: s.trainers, Nodes: s.nodes, LocalBatch: b, StepTime: step, SyncTime: step - grad}
			for _, o := range opts {
				o(&m, rng)
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// TestFitRecoversKnownParameters fits measurements made from known
// parameters and finds them again: exactly enough without noise, and the
// step times within the noise with it.
func TestFitRecoversKnownParameters(t *testing.T) {
	batches := []float64{8, 16, 32, 64}
	tests := []struct {
		name       string
		params     Params
		opts       []option
		paramTol   float64 // relative, on every parameter; 0 skips
		overlapTol float64 // absolute
		stepTol    float64 // relative error of any step time, sizes up to 64 replicas
	}{
		{name: "compute-bound, sync known", params: computeBound, paramTol: 0.02, overlapTol: 0.05, stepTol: 0.01},
		{name: "sync-bound, sync known", params: syncBound, paramTol: 0.02, overlapTol: 0.05, stepTol: 0.01},
		{name: "no retrogression, sync known", params: noRetrogression, paramTol: 0.02, overlapTol: 0.05, stepTol: 0.01},
		{name: "sync-bound, step times only", params: syncBound, opts: []option{withoutSync}, stepTol: 0.03},
		{name: "compute-bound, 5% noise", params: computeBound, opts: []option{withNoise(0.05)}, stepTol: 0.06},
		{name: "sync-bound, 5% noise", params: syncBound, opts: []option{withNoise(0.05)}, stepTol: 0.06},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := synthetic(tt.params, polluxSizes(), batches, tt.opts...)
			model, err := Fit(ms)
			require.NoError(t, err)
			assert.True(t, model.Measured())
			assert.Equal(t, 16, model.MaxTrainers)
			assert.Equal(t, len(ms), model.Measurements)
			got, want := model.Params.vector(), tt.params.vector()
			if tt.paramTol > 0 {
				for k := range paramCount - 1 {
					assert.InDelta(t, want[k], got[k], tt.paramTol*want[k]+1e-6, "parameter %d of %+v", k, model.Params)
				}
				assert.InDelta(t, want[overlap], got[overlap], tt.overlapTol, "overlap")
				assert.Less(t, model.FitError, 0.005)
			}
			// The step times at every size, up to 16 nodes and 64 replicas.
			truth := Model{Params: tt.params, MaxTrainers: 1}
			for _, s := range []size{{1, 1}, {4, 1}, {8, 2}, {16, 4}, {24, 6}, {48, 12}, {64, 16}} {
				for _, b := range []float64{4, 16, 100} {
					want := truth.StepTime(s.trainers, s.nodes, b)
					assert.InEpsilon(t, want, model.StepTime(s.trainers, s.nodes, b), tt.stepTol, "%d trainers on %d nodes, local batch %g", s.trainers, s.nodes, b)
				}
			}
		})
	}
}

// TestFitWithoutMeasurement: no measurement is no error and the zero
// Model, which knows it is not measured.
func TestFitWithoutMeasurement(t *testing.T) {
	for _, ms := range [][]Measurement{nil, {}} {
		model, err := Fit(ms)
		require.NoError(t, err)
		assert.Equal(t, Model{}, model)
		assert.False(t, model.Measured())
		assert.Zero(t, model.StepTime(4, 1, 32))
		assert.Zero(t, model.Throughput(4, 1, 128))
	}
}

// TestFitOneMeasurement: a single measurement is reproduced, and the
// priors fill in what it cannot tell.
func TestFitOneMeasurement(t *testing.T) {
	tests := []struct {
		name  string
		m     Measurement
		check func(t *testing.T, p Params)
	}{{
		name: "one trainer: the gradient time split evenly, nothing synchronised",
		m:    Measurement{Trainers: 1, Nodes: 1, LocalBatch: 32, StepTime: 0.4},
		check: func(t *testing.T, p Params) {
			assert.InDelta(t, 0.2, p.GradBase, 1e-9)
			assert.InDelta(t, 0.2/32, p.GradPerSample, 1e-9)
			assert.Equal(t, Params{GradBase: p.GradBase, GradPerSample: p.GradPerSample, Overlap: MinOverlap}, p)
		},
	}, {
		name: "two trainers on a node: no retrogression, the network 10% slower",
		m:    Measurement{Trainers: 2, Nodes: 1, LocalBatch: 16, StepTime: 0.5, SyncTime: 0.1},
		check: func(t *testing.T, p Params) {
			assert.InDelta(t, 0.2, p.GradBase, 1e-6)
			assert.Positive(t, p.SyncLocalBase)
			assert.Zero(t, p.SyncLocalPerReplica)
			assert.InDelta(t, networkPrior*p.SyncLocalBase, p.SyncNetBase, 1e-12)
			assert.Zero(t, p.SyncNetPerReplica)
		},
	}, {
		name: "eight trainers on two nodes: a node's links as fast as the network",
		m:    Measurement{Trainers: 8, Nodes: 2, LocalBatch: 16, StepTime: 0.5, SyncTime: 0.3},
		check: func(t *testing.T, p Params) {
			assert.InDelta(t, 0.1, p.GradBase, 1e-6)
			assert.Positive(t, p.SyncNetBase)
			assert.Equal(t, p.SyncNetBase, p.SyncLocalBase)
			assert.Equal(t, p.SyncNetPerReplica, p.SyncLocalPerReplica)
			assert.Less(t, p.SyncNetPerReplica, p.SyncNetBase/10, "retrogression leans to nothing")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, err := Fit([]Measurement{tt.m})
			require.NoError(t, err)
			assert.Equal(t, tt.m.Trainers, model.MaxTrainers)
			assert.Equal(t, 1, model.Measurements)
			assert.InEpsilon(t, tt.m.StepTime, model.StepTime(tt.m.Trainers, tt.m.Nodes, tt.m.LocalBatch), 1e-3)
			assert.Less(t, model.FitError, 1e-3)
			assert.GreaterOrEqual(t, model.Params.Overlap, float64(MinOverlap))
			assert.LessOrEqual(t, model.Params.Overlap, float64(MaxOverlap))
			tt.check(t, model.Params)
		})
	}
}

// TestFitKeepsParametersInBounds: whatever the measurements, every
// parameter is non-negative and finite and the overlap within its bounds,
// even for measurements no parameters fit (a step that shrinks with the
// batch, sync times that jump).
func TestFitKeepsParametersInBounds(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := range 20 {
		var ms []Measurement
		for range 1 + rng.Intn(12) {
			nodes := 1 + rng.Intn(4)
			trainers := nodes + rng.Intn(3*nodes+1)
			step := 0.01 + rng.Float64()
			m := Measurement{Trainers: trainers, Nodes: nodes, LocalBatch: float64(1 + rng.Intn(128)), StepTime: step}
			if trainers > 1 && rng.Intn(2) == 0 {
				m.SyncTime = step * rng.Float64() * 0.99
			}
			ms = append(ms, m)
		}
		model, err := Fit(ms)
		require.NoError(t, err, "case %d", i)
		v := model.Params.vector()
		for k, p := range v {
			assert.False(t, math.IsNaN(p) || math.IsInf(p, 0), "case %d parameter %d is %g", i, k, p)
			assert.GreaterOrEqual(t, p, 0.0, "case %d parameter %d", i, k)
		}
		assert.GreaterOrEqual(t, model.Params.Overlap, float64(MinOverlap), "case %d", i)
		assert.LessOrEqual(t, model.Params.Overlap, float64(MaxOverlap), "case %d", i)
	}
}

// TestFitRefusesUnusableMeasurements: a measurement that cannot be real
// is refused with an error naming it and its field.
func TestFitRefusesUnusableMeasurements(t *testing.T) {
	good := Measurement{Trainers: 2, Nodes: 1, LocalBatch: 32, StepTime: 0.5, SyncTime: 0.1}
	tests := []struct {
		name   string
		mutate func(*Measurement)
		want   string
	}{
		{"no trainer", func(m *Measurement) { m.Trainers = 0 }, "measurement 1: field Trainers is 0: must be at least 1"},
		{"no node", func(m *Measurement) { m.Nodes = 0 }, "measurement 1: field Nodes is 0: must be from 1 to Trainers (2)"},
		{"more nodes than trainers", func(m *Measurement) { m.Nodes = 3 }, "field Nodes is 3"},
		{"zero local batch", func(m *Measurement) { m.LocalBatch = 0 }, "field LocalBatch is 0: must be above 0"},
		{"NaN local batch", func(m *Measurement) { m.LocalBatch = math.NaN() }, "field LocalBatch is NaN"},
		{"zero step time", func(m *Measurement) { m.StepTime = 0 }, "measurement 1: field StepTime is 0 s: must be above 0"},
		{"negative step time", func(m *Measurement) { m.StepTime = -0.5 }, "field StepTime is -0.5 s"},
		{"infinite step time", func(m *Measurement) { m.StepTime = math.Inf(1) }, "field StepTime is +Inf s"},
		{"negative sync time", func(m *Measurement) { m.SyncTime = -0.1 }, "field SyncTime is -0.1 s: must be 0 (unknown) or above"},
		{"sync time the whole step", func(m *Measurement) { m.SyncTime = m.StepTime }, "field SyncTime is 0.5 s: must be below StepTime (0.5 s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := good
			tt.mutate(&bad)
			model, err := Fit([]Measurement{good, bad})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, Model{}, model)
		})
	}
}

// TestFitIsPure: Fit leaves its input alone and gives the same model for
// the same measurements.
func TestFitIsPure(t *testing.T) {
	ms := synthetic(syncBound, polluxSizes(), []float64{8, 32}, withNoise(0.05))
	before := append([]Measurement(nil), ms...)
	first, err := Fit(ms)
	require.NoError(t, err)
	second, err := Fit(ms)
	require.NoError(t, err)
	assert.Equal(t, before, ms)
	assert.Equal(t, first, second)
}
