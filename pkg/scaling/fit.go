package scaling

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/optimize"
)

// networkPrior is how much slower than a node's own links the network is
// taken to be when no measurement spans nodes (AdaptDL's prior).
const networkPrior = 1.1

// Fit fits the model to a job's measurements by least squares on the log
// of the step times, and of the gradient times where the synchronisation's
// part is known: a relative error weighs the same on a fast job as on a
// slow one. It returns the zero Model for no measurement, and an error
// naming the measurement and its field when one is not usable (a time
// that is not above 0, a sync time not below its step time, nodes beyond
// the trainers).
//
// What the measurements cannot tell is set by priors after AdaptDL's,
// which lean to the optimistic: with a single local batch the gradient
// time is split evenly between its base and its per-sample part; without
// a size beyond two replicas on a link, the link's retrogression is 0;
// without a measurement across nodes, the network is 10% slower than a
// node's links; without one of several replicas on one node, a node's
// links are as fast as the network (where AdaptDL makes them free, which
// would promise a job measured across nodes a free all-reduce on one);
// without any synchronisation, nothing is synchronised.
func Fit(ms []Measurement) (Model, error) {
	if len(ms) == 0 {
		return Model{}, nil
	}
	for i, m := range ms {
		if err := m.validate(); err != nil {
			return Model{}, fmt.Errorf("measurement %d: %w", i, err)
		}
	}
	o := newObjective(ms)
	var best [paramCount]float64
	bestValue := math.Inf(1)
	// The loss is not convex in γ: a start on each side of its usual
	// values finds the better basin.
	for _, gamma := range []float64{1.2, 4} {
		start := initialParams(ms)
		start[overlap] = gamma
		p, value, err := o.minimize(start)
		if err != nil {
			return Model{}, err
		}
		if value < bestValue {
			best, bestValue = p, value
		}
		if !slices.Contains(o.free, overlap) {
			break // γ is fixed: the other start would find the same
		}
	}
	params := applyPriors(paramsOf(best), ms)
	model := Model{Params: params, Measurements: len(ms)}
	for _, m := range ms {
		model.MaxTrainers = max(model.MaxTrainers, m.Trainers)
	}
	var sum float64
	for _, m := range ms {
		e := model.StepTime(m.Trainers, m.Nodes, m.LocalBatch)/m.StepTime - 1
		sum += e * e
	}
	model.FitError = math.Sqrt(sum / float64(len(ms)))
	return model, nil
}

// newObjective sums the measurements up by size and frees the parameters
// they can tell.
func newObjective(ms []Measurement) *objective {
	type size struct {
		trainers, nodes int
		localBatch      float64
	}
	index := map[size]int{}
	o := &objective{}
	for _, m := range ms {
		k := size{m.Trainers, m.Nodes, m.LocalBatch}
		i, ok := index[k]
		if !ok {
			i = len(o.points)
			index[k] = i
			o.points = append(o.points, point{trainers: m.Trainers, nodes: m.Nodes, localBatch: m.LocalBatch})
		}
		pt := &o.points[i]
		pt.logStep += math.Log(m.StepTime)
		pt.stepCount++
		o.stepTotal++
		if grad, ok := m.gradTime(); ok {
			pt.logGrad += math.Log(grad)
			pt.gradCount++
			o.gradTotal++
		}
	}
	for i := range o.points {
		pt := &o.points[i]
		pt.logStep /= pt.stepCount
		if pt.gradCount > 0 {
			pt.logGrad /= pt.gradCount
		}
	}
	o.free = []int{gradBase, gradPerSample}
	seen := observed(ms)
	for _, k := range []int{syncLocalBase, syncLocalPerReplica, syncNetBase, syncNetPerReplica} {
		if seen[k] {
			o.free = append(o.free, k)
		}
	}
	if seen[syncLocalBase] || seen[syncNetBase] {
		o.free = append(o.free, overlap)
	}
	return o
}

// observed says which synchronisation parameters the measurements tell:
// a link's base once a size uses it, its retrogression once a size uses it
// with more than two replicas.
func observed(ms []Measurement) [paramCount]bool {
	var seen [paramCount]bool
	for _, m := range ms {
		base, perReplica, beyondTwo := syncTerms(m.Trainers, m.Nodes)
		if base < 0 {
			continue
		}
		seen[base] = true
		if beyondTwo > 0 {
			seen[perReplica] = true
		}
	}
	return seen
}

// initialParams is where the search starts: the gradient time's line
// through the gradient times known (or half the step times), each link's
// mean synchronisation time (or a fifth of its step time) as its base and
// a twentieth of that as its retrogression.
func initialParams(ms []Measurement) [paramCount]float64 {
	var n, sx, sy, sxx, sxy float64
	for _, m := range ms {
		y, ok := m.gradTime()
		if !ok {
			y = m.StepTime / 2
		}
		n++
		sx += m.LocalBatch
		sy += y
		sxx += m.LocalBatch * m.LocalBatch
		sxy += m.LocalBatch * y
	}
	meanX, meanY := sx/n, sy/n
	slope := 0.0
	if v := sxx/n - meanX*meanX; v > 0 {
		slope = (sxy/n - meanX*meanY) / v
	}
	var p [paramCount]float64
	if slope <= 0 || meanY-slope*meanX <= 0 {
		slope = meanY / 2 / meanX
	}
	p[gradPerSample] = slope
	p[gradBase] = meanY - slope*meanX
	var sum, count [paramCount]float64
	for _, m := range ms {
		base, _, _ := syncTerms(m.Trainers, m.Nodes)
		if base < 0 {
			continue
		}
		sync := m.SyncTime
		if sync == 0 {
			sync = m.StepTime / 5
		}
		sum[base] += sync
		count[base]++
	}
	for _, link := range [][2]int{{syncLocalBase, syncLocalPerReplica}, {syncNetBase, syncNetPerReplica}} {
		if base := link[0]; count[base] > 0 {
			p[base] = sum[base] / count[base]
			p[link[1]] = p[base] / 20
		}
	}
	return p
}

// minimize searches from start and returns the best parameters found and
// their loss.
func (o *objective) minimize(start [paramCount]float64) ([paramCount]float64, float64, error) {
	o.fixed = start
	o.lastX = nil
	problem := optimize.Problem{Func: o.Func, Grad: o.Grad}
	settings := &optimize.Settings{
		GradientThreshold: 1e-10,
		MajorIterations:   1000,
		Converger:         &optimize.FunctionConverge{Absolute: 1e-12, Relative: 1e-9, Iterations: 20},
	}
	x0 := o.searchOf(start)
	result, err := optimize.Minimize(problem, x0, settings, &optimize.LBFGS{})
	if result == nil {
		return start, o.Func(x0), fmt.Errorf("fit: %w", err)
	}
	// A line search that can make no more progress ends with an error
	// though the point it reached is the fit: keep it if it is finite.
	if err != nil && (math.IsNaN(result.F) || math.IsInf(result.F, 0)) {
		return start, o.Func(x0), fmt.Errorf("fit: %w", err)
	}
	return o.params(result.X), result.F, nil
}

// applyPriors sets what the measurements did not tell (see [Fit]).
func applyPriors(p Params, ms []Measurement) Params {
	seen := observed(ms)
	batches := map[float64]bool{}
	for _, m := range ms {
		batches[m.LocalBatch] = true
	}
	if len(batches) == 1 {
		b := ms[0].LocalBatch
		grad := p.GradBase + p.GradPerSample*b
		p.GradBase, p.GradPerSample = grad/2, grad/2/b
	}
	if !seen[syncLocalPerReplica] {
		p.SyncLocalPerReplica = 0
	}
	if !seen[syncNetPerReplica] {
		p.SyncNetPerReplica = 0
	}
	switch {
	case !seen[syncNetBase]:
		p.SyncNetBase = networkPrior * p.SyncLocalBase
		p.SyncNetPerReplica = networkPrior * p.SyncLocalPerReplica
	case !seen[syncLocalBase]:
		p.SyncLocalBase, p.SyncLocalPerReplica = p.SyncNetBase, p.SyncNetPerReplica
	}
	if !seen[syncLocalBase] && !seen[syncNetBase] {
		p.Overlap = MinOverlap
	}
	return p
}
