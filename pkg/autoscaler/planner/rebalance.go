package planner

import (
	"container/heap"
	"time"
)

// DefaultRebalanceGap is the fulfillment difference between two jobs of one
// priority above which Plan moves trainers from the more fulfilled one, used
// when Options.RebalanceGap is not positive.
const DefaultRebalanceGap = 0.1

// DefaultMovesPerSecond is how many trainers the autoscaler lets
// rebalancing and reclaim move per second of its interval unless told
// otherwise. kube-controller-manager's ReplicaSet controller makes about 20
// requests a second at its default client QPS, and a move is one pod
// deleted and one created: at this rate the moves of one plan are done
// before the next. Rebalancing makes half of them at most
// ([rebalanceMoves]).
const DefaultMovesPerSecond = 10

// rebalanceMoves is how many of the plan's limit of moves rebalancing may
// make: half, at least one (0, no cap, stays 0). Rebalancing evens out jobs
// that all run, and no pod waits for its moves, while every move is two of
// kube-controller-manager's requests: at the whole limit, which the
// default sets to kube-controller-manager's whole default rate, the pods
// of jobs starting and growing queue behind the moves. Reclaim, whose
// takers are the jobs of a team below its share, may use the rest.
// (Measured in experiment 1, two runs each in turns: jobs waited 2.1–2.2 s
// for phase Running with half the limit, 3.9–4.1 s with all of it, at the
// same useful utilization.)
func rebalanceMoves(limit int32) int32 {
	if limit <= 0 {
		return 0
	}
	return max(1, limit/2)
}

// MovesPerCycle is Options.MaxRebalancePerCycle for plans interval apart:
// perSecond moves per second (DefaultMovesPerSecond when not positive), at
// least 1.
func MovesPerCycle(interval time.Duration, perSecond float64) int32 {
	if perSecond <= 0 {
		perSecond = DefaultMovesPerSecond
	}
	return int32(max(1, min(interval.Seconds()*perSecond, 1<<30))) // #nosec G115 -- clamped to [1, 2^30]
}

// rebalance moves capacity between the running jobs of one priority and
// pool: while the most fulfilled job is more than the gap above the least
// fulfilled one that could grow, the former gives back its newest trainer,
// provided the latter's trainer fits where it leaves and within
// MaxLoadDesired, and the move does not reverse their order. The takers
// scale up in the same plan: their new pods wait for the givers'
// trainers to go, and kube-scheduler binds them as soon as the room is free
// — a cycle sooner than growth could hand the room out in the next plan,
// which is the dip in the cluster's use that each move costs. The moves of
// one plan stop at half of Options.MaxRebalancePerCycle (rebalanceMoves):
// the rest wait for the next plans, so that each wave is one the
// ReplicaSet controller carries out within an interval beside the pods of
// jobs starting. Without this phase a job that arrives when the
// cluster is full keeps its minimum for as long as the earlier jobs run.
//
// A plan whose earlier phases took trainers back moves nothing: one kind of
// change at a time. (Rebalancing the other jobs when the plan only gave up
// trainers no node took was tried: in experiment 1 it moved a fifth more
// trainers, and the jobs arriving on a full cluster waited longer behind
// the takers' pods.)
func (p *plan) rebalance() {
	gap := p.rebalanceGap()
	for _, j := range p.jobs {
		if j.shrunk > 0 {
			return // this plan yields already: one kind of change at a time
		}
	}
	// A job that growth can serve from idle capacity takes nothing.
	for _, j := range p.movable {
		j.growsFromIdle = p.grower.firstFit(j.req, j.elig) >= 0 && p.loadAdmits(j) && p.quotaAllows(j, 1)
	}
	// Jobs compete for room with the jobs of their priority in their pool:
	// the jobs of another pool could not use what they give back.
	// With teams, jobs compete with the jobs of their team only: room goes
	// between teams by reclaim.
	levels, byLevel := p.levels(true)
	m := p.newMoves()
	m.limit, m.phase = rebalanceMoves(p.opts.MaxRebalancePerCycle), "rebalancing"
	if gap >= 1 {
		levels = nil // fulfillments never differ by more than 1
	}
levels:
	for _, level := range levels {
		ahead := p.aheadOf(level.priority)
		givers := &jobHeap{less: giveFirst}
		takers := &jobHeap{less: takeFirst, at: func(j *jobState) *int { return &j.takerAt }}
		for _, j := range byLevel[level] {
			givers.items = append(givers.items, j)
			takers.items = append(takers.items, j)
		}
		takers.index()
		heap.Init(givers)
		heap.Init(takers)
		for givers.Len() > 0 && takers.Len() > 0 {
			giver, taker := givers.items[0], takers.items[0]
			// Drop who cannot give or take any more.
			if !giver.mayGive() {
				heap.Pop(givers)
				continue
			}
			if !taker.mayTake() {
				heap.Pop(takers)
				continue
			}
			// Under goodput a job whose model is not concave can be both the
			// giver its last trainer helps least and the taker its next one
			// helps most: a trainer it needs most is not taken from it.
			if giver == taker {
				heap.Pop(givers)
				continue
			}
			if giver.modelled() && taker.modelled() {
				if !worthMoving(giver, taker) {
					break // the trainer the giver loses least by gains the taker too little
				}
			} else {
				gf, tf := giver.fulfillment(), taker.fulfillmentAt(taker.placed+taker.promised)
				if gf-tf <= moveGap(gap, giver, taker) {
					break // the most fulfilled giver is close enough to the least fulfilled taker
				}
				// After the move the giver must still be at least as fulfilled
				// as the taker, or the next plan would move the trainer back.
				if fulfillmentAt(giver, giver.placed-1, taker, taker.placed+taker.promised+1) < 0 {
					break
				}
			}
			switch p.move(m, giver, taker, ahead) {
			case noRoomForTaker:
				heap.Pop(givers)
				continue
			case takerOutOfQuota:
				heap.Pop(takers)
				continue
			case capped:
				break levels
			case movedOne:
				if giver.takerAt >= 0 {
					heap.Remove(takers, giver.takerAt) // a job that gives takes nothing
				}
				heap.Fix(givers, 0)
				heap.Fix(takers, taker.takerAt)
				continue
			}
			break // over the load threshold
		}
	}
	p.reclaim(m)
	for _, j := range p.movable {
		if j.promised > 0 {
			j.desired += j.promised
			j.placed += j.promised
			for range j.promised {
				spend(p.quotas[j.ns], j.req, j.lim)
			}
		}
	}
}

// takesFirst reports whether one of the jobs growth serves before the taker
// may use node n and fits in room there.
func takesFirst(ahead []*jobState, n int32, room vec, p *plan) bool {
	for _, j := range ahead {
		if j.elig.has(n, p.classes.classOf[n]) && j.req.fitsIn(room) {
			return true
		}
	}
	return false
}

// giveFirst orders the givers: the most fulfilled first (by goodput, the
// one its last trainer gains least), then by key.
func giveFirst(a, b *jobState) bool {
	if c := giveCmp(a, b); c != 0 {
		return c > 0
	}
	return a.key < b.key
}

// takeFirst orders the takers: the least fulfilled first (by goodput, the
// one a trainer gains most), counting the trainers promised to them, then
// by key.
func takeFirst(a, b *jobState) bool {
	if c := needCmp(a, a.placed+a.promised, b, b.placed+b.promised); c != 0 {
		return c < 0
	}
	return a.key < b.key
}

func (p *plan) rebalanceGap() float64 {
	if gap := p.opts.RebalanceGap; gap > 0 && gap <= 1 {
		return gap
	}
	if p.opts.RebalanceGap > 1 {
		return 1
	}
	return DefaultRebalanceGap
}
