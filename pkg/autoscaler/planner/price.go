package planner

import (
	"fmt"
	"time"
)

// ResizeCostFactor is k in a resize-restarting job's cool-down, max(CoolDown,
// k × ResizeCost): a resize stops the job's training for about ResizeCost,
// so with one resize per k × ResizeCost at most the job still trains at
// least k/(k+1) of the time — four fifths with k = 4 — however often the
// cluster around it changes.
const ResizeCostFactor = 4

// DefaultGrowMargin is edl's default Options.GrowMargin (-grow_margin):
// one point of load, a band that the measurement differences between the
// two rules (pods going, pods not yet bound) stay within.
const DefaultGrowMargin = 0.01

// priceState is a job's part in the price of resizes ([plan.priceResizes]).
type priceState struct {
	// resizeHeld: the job restarts on resize and resized less than its
	// cool-down ago; it is neither grown nor shrunk for load, rebalancing
	// or reclaim until resizeUntil. Yields to pods of a higher priority,
	// and giving up trainers no node took, do not wait for it.
	resizeHeld  bool
	resizeUntil time.Time
}

// ResizeCoolDown is how long after a resize a job that restarts on resize
// is not resized again but to yield: max(coolDown, ResizeCostFactor ×
// ResizeCost, MinResizeInterval). For a job that does not restart on
// resize it is 0.
func (j *Job) ResizeCoolDown(coolDown time.Duration) time.Duration {
	if !j.RestartsOnResize {
		return 0
	}
	return max(coolDown, ResizeCostFactor*j.ResizeCost, j.MinResizeInterval)
}

// priceResizes holds the jobs whose last resize is more recent than their
// cool-down.
func (p *plan) priceResizes() {
	for _, j := range p.jobs {
		in := j.in
		if !in.RestartsOnResize || in.LastResize.IsZero() {
			continue
		}
		if until := in.LastResize.Add(in.ResizeCoolDown(p.opts.CoolDown)); p.opts.Now.Before(until) {
			j.resizeHeld, j.resizeUntil = true, until
		}
	}
}

// growThreshold is the load growth stops at: GrowMargin below the load
// rule's threshold, so that a trainer the load rule took is not grown back
// without a change in the cluster bigger than the margin (hysteresis).
func (p *plan) growThreshold() float64 {
	m := p.opts.GrowMargin
	if !(m > 0) || m >= p.threshold {
		m = 0
	}
	return p.threshold - m
}

// moveGap is how far in fulfillment a giver must be above a taker for
// rebalancing to move a trainer between them: the gap, and one more gap
// for every one of the two that restarts on resize — the move stops and
// restarts all of its trainers, which the gain must outweigh.
func moveGap(gap float64, giver, taker *jobState) float64 {
	n := 1.0
	if giver.restarts() {
		n++
	}
	if taker.restarts() {
		n++
	}
	return gap * n
}

// restarts reports whether j restarts on resize; a job arriving has no Job.
func (j *jobState) restarts() bool { return j.in != nil && j.in.RestartsOnResize }

// resizeHeldMessage explains a job held by the price of its resizes: "held
// at 3 trainers: resized 40s ago, next resize after its 1m20s cool-down
// (4 × its last resize's cost of 20s)".
func resizeHeldMessage(j *jobState, opts Options) string {
	cd := j.in.ResizeCoolDown(opts.CoolDown)
	why := fmt.Sprintf("%d × its last resize's cost of %s", ResizeCostFactor, j.in.ResizeCost)
	switch cd {
	case j.in.MinResizeInterval:
		why = "spec.elasticPolicy.resizeCooldownSeconds"
	case opts.CoolDown:
		why = "the autoscaler's cool-down"
	}
	return fmt.Sprintf("held at %d trainers: resized %s ago, next resize after its %s cool-down (%s); every resize restarts all of its trainers",
		j.desired, opts.Now.Sub(j.in.LastResize).Round(time.Second), cd, why)
}
