package scaling

import (
	"math"
	"slices"
)

// The parameters' places in a vector, in the order of [Params].
const (
	gradBase = iota
	gradPerSample
	syncLocalBase
	syncLocalPerReplica
	syncNetBase
	syncNetPerReplica
	overlap
	paramCount
)

// The regularisation's weights. They only break the ties the measurements
// leave — the overlap when nothing synchronises, a retrogression no size
// beyond two replicas tells — and are a hundredth of the squared log error
// of a fit within 1%, so they do not bias a fit the data decide: the
// overlap leans to 1, where the other parameters are easiest to fit, and
// the all-reduce's retrogression to nothing beside its base, the
// optimistic choice (AdaptDL's prior).
const (
	overlapWeight       = 1e-6
	retrogressionWeight = 1e-6
)

// vector returns the parameters in their places.
func (p Params) vector() [paramCount]float64 {
	return [paramCount]float64{p.GradBase, p.GradPerSample, p.SyncLocalBase,
		p.SyncLocalPerReplica, p.SyncNetBase, p.SyncNetPerReplica, p.Overlap}
}

// paramsOf is the inverse of [Params.vector].
func paramsOf(v [paramCount]float64) Params {
	return Params{GradBase: v[gradBase], GradPerSample: v[gradPerSample],
		SyncLocalBase: v[syncLocalBase], SyncLocalPerReplica: v[syncLocalPerReplica],
		SyncNetBase: v[syncNetBase], SyncNetPerReplica: v[syncNetPerReplica],
		Overlap: v[overlap]}
}

// point is every measurement of one size, (trainers, nodes, local batch),
// summed up: the mean log of their step times and of the gradient times
// known, with the counts as weights. The sum of squared log errors over
// the measurements is the weighted one over the points plus a constant,
// so fitting the points fits the measurements.
type point struct {
	trainers, nodes    int
	localBatch         float64
	logStep, stepCount float64
	logGrad, gradCount float64
}

// objective is the fit's loss as a function of the free parameters, the
// others held at their values in fixed. A free parameter lives in log space
// (so it stays above 0) and the overlap in a logistic one between
// MinOverlap and MaxOverlap, which leaves the search unbounded.
type objective struct {
	points    []point
	stepTotal float64 // the measurements' count
	gradTotal float64 // how many of them tell the gradient time
	free      []int
	fixed     [paramCount]float64
	lastX     []float64
	lastValue float64
	lastGrad  []float64
}

// params maps the search's x to the model's parameters.
func (o *objective) params(x []float64) [paramCount]float64 {
	p := o.fixed
	for j, k := range o.free {
		if k == overlap {
			p[k] = MinOverlap + (MaxOverlap-MinOverlap)*logistic(x[j])
		} else {
			p[k] = math.Exp(x[j])
		}
	}
	return p
}

// searchOf maps parameters to the search's x: the inverse of params.
func (o *objective) searchOf(p [paramCount]float64) []float64 {
	x := make([]float64, len(o.free))
	for j, k := range o.free {
		if k == overlap {
			u := (p[k] - MinOverlap) / (MaxOverlap - MinOverlap)
			u = math.Min(math.Max(u, 1e-6), 1-1e-6)
			x[j] = math.Log(u / (1 - u))
		} else {
			x[j] = math.Log(math.Max(p[k], 1e-12))
		}
	}
	return x
}

// Func is the loss at x.
func (o *objective) Func(x []float64) float64 {
	o.evaluate(x)
	return o.lastValue
}

// Grad writes the loss's gradient at x into grad.
func (o *objective) Grad(grad, x []float64) {
	o.evaluate(x)
	copy(grad, o.lastGrad)
}

// evaluate computes the loss and its gradient at x once for the pair of
// calls the search makes at every point it tries.
func (o *objective) evaluate(x []float64) {
	if o.lastX != nil && slices.Equal(o.lastX, x) {
		return
	}
	p := o.params(x)
	value, dp := o.loss(p)
	if o.lastGrad == nil {
		o.lastGrad = make([]float64, len(o.free))
	}
	for j, k := range o.free {
		if k == overlap {
			s := logistic(x[j])
			o.lastGrad[j] = dp[k] * (MaxOverlap - MinOverlap) * s * (1 - s)
		} else {
			o.lastGrad[j] = dp[k] * p[k]
		}
	}
	o.lastX = append(o.lastX[:0], x...)
	o.lastValue = value
}

// loss is the mean squared log error of the step times plus that of the
// gradient times, and the regularisation, with its gradient with respect
// to the parameters.
func (o *objective) loss(p [paramCount]float64) (float64, [paramCount]float64) {
	var value float64
	var d [paramCount]float64
	gamma := p[overlap]
	for _, pt := range o.points {
		grad := p[gradBase] + p[gradPerSample]*pt.localBatch
		logGrad := math.Log(grad)
		if pt.gradCount > 0 {
			r := logGrad - pt.logGrad
			value += pt.gradCount * r * r / o.gradTotal
			c := 2 * pt.gradCount * r / o.gradTotal / grad
			d[gradBase] += c
			d[gradPerSample] += c * pt.localBatch
		}
		base, perReplica, beyondTwo := syncTerms(pt.trainers, pt.nodes)
		sync := 0.0
		if base >= 0 {
			sync = p[base] + p[perReplica]*beyondTwo
		}
		logStep, dGrad, dSync, dGamma := logCombine(grad, logGrad, sync, gamma)
		r := logStep - pt.logStep
		value += pt.stepCount * r * r / o.stepTotal
		c := 2 * pt.stepCount * r / o.stepTotal
		d[gradBase] += c * dGrad
		d[gradPerSample] += c * dGrad * pt.localBatch
		if base >= 0 {
			d[base] += c * dSync
			d[perReplica] += c * dSync * beyondTwo
		}
		d[overlap] += c * dGamma
	}
	value += overlapWeight * (gamma - 1) * (gamma - 1)
	d[overlap] += 2 * overlapWeight * (gamma - 1)
	for _, pair := range [][2]int{{syncLocalBase, syncLocalPerReplica}, {syncNetBase, syncNetPerReplica}} {
		a, b := p[pair[0]], p[pair[1]]
		if a <= 0 || b <= 0 {
			continue
		}
		value += retrogressionWeight * (b / a) * (b / a)
		d[pair[1]] += 2 * retrogressionWeight * b / (a * a)
		d[pair[0]] -= 2 * retrogressionWeight * b * b / (a * a * a)
	}
	return value, d
}

// syncTerms returns the places of the base and per-replica parameters of
// the link a size's all-reduce uses, and its replicas beyond two; a base
// of -1 means no all-reduce (one replica).
func syncTerms(trainers, nodes int) (base, perReplica int, beyondTwo float64) {
	beyondTwo = float64(max(trainers-2, 0))
	switch {
	case trainers <= 1:
		return -1, -1, 0
	case nodes > 1:
		return syncNetBase, syncNetPerReplica, beyondTwo
	default:
		return syncLocalBase, syncLocalPerReplica, beyondTwo
	}
}

// logCombine is the log of [combine] and its derivatives with respect to
// grad, sync and γ, computed in log space so that no power overflows.
func logCombine(grad, logGrad, sync, gamma float64) (logStep, dGrad, dSync, dGamma float64) {
	if sync <= 0 {
		return logGrad, 1 / grad, 0, 0
	}
	logSync := math.Log(sync)
	t1, t2 := gamma*logGrad, gamma*logSync
	hi := math.Max(t1, t2)
	lse := hi + math.Log(math.Exp(t1-hi)+math.Exp(t2-hi))
	logStep = lse / gamma
	a, b := math.Exp(t1-lse), math.Exp(t2-lse) // the shares of grad^γ and sync^γ
	dGrad = a / grad
	dSync = b / sync
	dGamma = (a*(logGrad-logStep) + b*(logSync-logStep)) / gamma
	return logStep, dGrad, dSync, dGamma
}

func logistic(x float64) float64 {
	return 1 / (1 + math.Exp(-x))
}
