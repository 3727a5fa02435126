package planner

import (
	"fmt"
	"math"
	"time"
)

// Policy is how growth, rebalancing and the phases that take trainers back
// choose between the jobs of one priority (and, with teams, of one team).
type Policy string

const (
	// PolicyFulfillment serves the least fulfilled job first: the share
	// of its range above its minimum that it holds, (placed−min)/(max−min).
	// Every trainer is taken to help its job equally. The zero Policy is
	// this one.
	PolicyFulfillment Policy = "fulfillment"
	// PolicyGoodput serves first the job whose next trainer speeds it up
	// most, per unit of the resource a trainer takes most of, as the job's
	// scaling model predicts ([Progress.Speedup]); it grows no job by a
	// trainer that adds less than MinGain, nor, when a resize restarts the
	// job, by a resize that saves less time than a restart costs.
	PolicyGoodput Policy = "goodput"
)

// MinGain is the least a trainer must add to its job's throughput, in
// units of one trainer's, for the goodput policy to give it one: a GPU
// that adds less than a tenth of a GPU's work is left for the next job.
const MinGain = 0.1

// MoveGainFactor is how many times more the goodput policy's rebalancing
// asks a trainer to gain the job that takes it than it gains the job that
// gives it: a margin that keeps a move from being undone by the next
// plan's slightly different model, and pays for the two restarts.
const MoveGainFactor = 2

// goodputState is the job's part in the goodput policy: whether the plan
// uses it, and the job's speedups at the sizes asked for so far.
type goodputState struct {
	goodput  bool
	share    float64   // one trainer's dominant share of its pool
	speedups []float64 // speedup at n trainers, NaN until computed
	shedFrom int64     // the trainers placed before shed gave one back, 0 for none
}

// speedup is j's predicted throughput at n trainers relative to one
// trainer's: n for a job that reports no progress.
func (j *jobState) speedup(n int64) float64 {
	if j.in == nil || j.in.Progress == nil || n < 1 {
		return float64(max(n, 0))
	}
	if n >= 1<<16 {
		return j.in.Progress.Speedup(1 << 16)
	}
	for int64(len(j.speedups)) <= n {
		j.speedups = append(j.speedups, math.NaN())
	}
	if math.IsNaN(j.speedups[n]) {
		j.speedups[n] = j.in.Progress.Speedup(int32(n)) // #nosec G115 -- below 2^16
	}
	return j.speedups[n]
}

// gainAt is what one more trainer is worth to j with n placed: how much it
// raises the job's throughput, in units of one trainer's (S(n+1) − S(n),
// the marginal of Pollux's fitness with p = 1), per unit of the resource
// its trainer takes most of. A job that reports nothing gains 1 at every
// size, so such jobs tie and share by fulfillment. A job with no trainer
// placed gains without bound. The marginal of the time per unit of work
// (1/S(n) − 1/S(n+1), p = −1) was tried: it serves jobs at small sizes
// first, and on the Pollux trace its p99 JCT was 4.6% above
// fulfillment's at 1.0× load (docs/experiments-trace.md).
func (j *jobState) gainAt(n int64) float64 {
	s0, s1 := j.speedup(n), j.speedup(n+1)
	if !(s0 > 0) {
		return math.Inf(1)
	}
	if j.share == 0 {
		if j.pool != nil {
			j.share = dominantShare(j.req, j.pool.total)
		}
		if !(j.share > 0) || math.IsInf(j.share, 1) {
			j.share = 1
		}
	}
	if !(s1 > 0) {
		return math.Inf(-1)
	}
	return (s1 - s0) / j.share
}

// needCmp compares how much a, with aPlaced trainers placed, needs one
// more trainer with how much b does, with bPlaced: below 0 when a needs it
// more. Under the fulfillment policy that is the less fulfilled job; under
// goodput the one the trainer gains more ([jobState.gainAt]), and the less
// fulfilled one of two that gain alike (two jobs reporting nothing at one
// size, say).
func needCmp(a *jobState, aPlaced int64, b *jobState, bPlaced int64) int {
	if a.goodput {
		ga, gb := a.gainAt(aPlaced), b.gainAt(bPlaced)
		switch {
		case ga > gb:
			return -1
		case ga < gb:
			return 1
		}
	}
	return fulfillmentAt(a, aPlaced, b, bPlaced)
}

// giveCmp compares which of a and b gives a trainer back first: above 0
// when a does. Under the fulfillment policy that is the more fulfilled job;
// under goodput the one whose last trainer gains it less, and the more
// fulfilled one of two whose last trainers gain them alike.
func giveCmp(a, b *jobState) int {
	if a.goodput {
		ga, gb := a.gainAt(a.placed-1), b.gainAt(b.placed-1)
		switch {
		case ga < gb:
			return 1
		case ga > gb:
			return -1
		}
	}
	return fulfillmentCmp(a, b)
}

// modelled reports whether the goodput policy judges j by its scaling
// model: under goodput, for a job that reports its progress. A job that
// reports nothing keeps the fulfillment policy's treatment.
func (j *jobState) modelled() bool {
	return j.goodput && j.in != nil && j.in.Progress != nil
}

// addsTooLittle reports whether, under goodput, j's next trainer would add
// less than MinGain to its throughput: growth leaves the room to others.
func (j *jobState) addsTooLittle() bool { return j.addsTooLittleAt(j.placed) }

// addsTooLittleAt is addsTooLittle with n trainers placed or promised.
func (j *jobState) addsTooLittleAt(n int64) bool {
	return j.modelled() && j.speedup(n+1)-j.speedup(n) < MinGain
}

// saves is the time one more trainer saves j, with n placed, of the time
// it has left; 0 when it has not said how much work it has left.
func (j *jobState) saves(n int64) time.Duration {
	if j.in == nil || j.in.Progress == nil || j.in.Progress.Left <= 0 {
		return 0
	}
	s0, s1 := j.speedup(n), j.speedup(n+1)
	if !(s0 > 0) || !(s1 > s0) {
		return 0
	}
	return time.Duration(float64(j.in.Progress.Left) * (1 - s0/s1))
}

// notWorthRestart reports whether, under goodput, growing j would cost it
// more than it saves: its resizes restart it, it has said how long it has
// left, and its next trainer saves less of that than its last restart
// cost.
func (j *jobState) notWorthRestart() bool {
	if !j.goodput || !j.restarts() || j.in.Progress == nil || j.in.Progress.Left <= 0 || j.in.ResizeCost <= 0 {
		return false
	}
	return j.saves(j.placed) < j.in.ResizeCost
}

// worthMoving reports whether, under goodput, rebalancing moves a trainer
// from giver to taker: the taker gains MoveGainFactor times what the giver
// loses, and, where the taker has said how long it has left, the time the
// trainer saves it is more than the restarts the move costs the two.
func worthMoving(giver, taker *jobState) bool {
	gained, lost := taker.gainAt(taker.placed+taker.promised), giver.gainAt(giver.placed-1)
	if !(gained > MoveGainFactor*lost) || taker.addsTooLittleAt(taker.placed+taker.promised) {
		return false
	}
	if saved := taker.saves(taker.placed + taker.promised); saved > 0 {
		var cost time.Duration
		for _, j := range []*jobState{giver, taker} {
			if j.restarts() {
				cost += j.in.ResizeCost
			}
		}
		return saved > cost
	}
	return true
}

// gainText says what j's trainer at n+1 adds: "a 4th trainer adds 0.80×
// (2.10× → 2.90× one trainer's throughput)".
func (j *jobState) gainText(n int64, verb string) string {
	s0, s1 := j.speedup(n), j.speedup(n+1)
	return fmt.Sprintf("a %s trainer %s %.2f× (%.2f× → %.2f× one trainer's throughput)", ordinal(n+1), verb, s1-s0, s0, s1)
}

// ordinal is n as "1st", "2nd", "3rd", "4th".
func ordinal(n int64) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

// slows reports whether, under goodput, j's last trainer costs the job
// more than MinGain of one trainer's throughput: its model, measured at
// that size (the prior above the sizes measured never predicts a loss),
// says it runs faster with one fewer.
func (j *jobState) slows() bool {
	return j.goodput && j.in.Progress != nil && j.placed > 1 && j.speedup(j.placed-1)-j.speedup(j.placed) > MinGain
}

// shed gives back, under goodput, the last trainer of every job it slows
// down ([jobState.slows]) — one a plan, never below the job's minimum,
// never inside a resize's cool-down — unless the job restarts on a resize
// and the time the smaller size saves of what it has left is less than
// its last restart cost. It runs after rebalancing, which moves such a
// trainer to a job it speeds up where one can take it; the room shed
// frees goes out by growth in the next plans, never back to the job that
// gave it (its trainer would add less than MinGain).
func (p *plan) shed() {
	for _, j := range p.movable {
		if j.shrunk > 0 || !j.slows() || !j.mayGive() {
			continue
		}
		if j.restarts() && j.in.Progress.Left > 0 && j.in.ResizeCost > 0 {
			saved := time.Duration(float64(j.in.Progress.Left) * (1 - j.speedup(j.placed)/j.speedup(j.placed-1)))
			if saved < j.in.ResizeCost {
				continue
			}
		}
		j.shedFrom = j.placed
		p.removeNext(j)
	}
}

// shedReason says why shed gave back j's trainer.
func (j *jobState) shedReason() string {
	return fmt.Sprintf("scale down by 1: %s; the job runs faster without it (priority %d)", j.gainText(j.shedFrom-1, "adds"), j.priority)
}
