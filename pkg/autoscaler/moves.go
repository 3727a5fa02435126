package autoscaler

import (
	"sync"
	"time"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// moveBudget is what -max_moves_per_second lets a plan move: a bucket that
// the rate fills, up to an interval's worth, and that each plan's moves
// empty. A plan an event woke between two ticks moves what the time since
// the plan before brought, plus what the plans before left: a plan that
// moved nothing (one that yields moves nothing, one kind of change at a
// time) does not waste the rate, and over any stretch of time the moves
// stay within the rate's share of it plus an interval's, however many plans
// run. The budget is kept as time: the rate's seconds not yet spent.
type moveBudget struct {
	mu     sync.Mutex
	banked time.Duration // the rate's time the plans before left, at most an interval
	at     time.Time     // when banked was reckoned; zero before the first plan
}

// allowance is how many trainers a plan at now may move: at least one.
func (b *moveBudget) allowance(now time.Time, interval time.Duration, perSecond float64) int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return planner.MovesPerCycle(b.time(now, interval), perSecond)
}

// spend takes the moves of a plan at now out of the budget.
func (b *moveBudget) spend(now time.Time, interval time.Duration, perSecond float64, moved int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	used := time.Duration(float64(moved) / planner.MovesPerSecond(perSecond) * float64(time.Second))
	b.banked, b.at = max(0, b.time(now, interval)-used), now
}

// time is the rate's time a plan at now may spend: the first plan's is an
// interval.
func (b *moveBudget) time(now time.Time, interval time.Duration) time.Duration {
	if b.at.IsZero() {
		return interval
	}
	return min(interval, b.banked+max(0, now.Sub(b.at)))
}
