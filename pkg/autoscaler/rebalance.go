package autoscaler

// DefaultRebalanceGap is the fulfillment difference between two jobs of one
// priority above which Plan moves trainers from the more fulfilled one, used
// when Options.RebalanceGap is not positive.
const DefaultRebalanceGap = 0.1

// rebalance moves capacity between the running jobs of one priority: while
// the most fulfilled job is more than the gap above the least fulfilled one
// that could grow, the former gives back its newest trainer, provided the
// latter's trainer fits where it leaves and within MaxLoadDesired, and the
// move does not reverse their order. Only the scale-downs are planned here;
// the freed capacity is still held by the terminating pods, and growth hands
// it to the least fulfilled jobs in the next cycles, while the givers cool
// down. Without this phase a job that arrives when the cluster is full keeps
// its minimum for as long as the earlier jobs run.
func (p *planner) rebalance() {
	gap := p.rebalanceGap()
	if gap >= 1 {
		return // fulfillments never differ by more than 1
	}
	for _, j := range p.jobs {
		if j.shrunk > 0 {
			return // this plan yields already: one kind of change at a time
		}
	}
	byPriority := map[int32][]*jobState{}
	var levels []int32
	for _, j := range p.movable {
		if _, seen := byPriority[j.priority]; !seen {
			levels = append(levels, j.priority)
		}
		byPriority[j.priority] = append(byPriority[j.priority], j)
	}
	// A job that growth can serve from idle capacity takes nothing: nothing
	// was freed in this plan yet, so the fit index holds exactly the idle
	// capacity growth hands out.
	for _, j := range p.movable {
		j.growsFromIdle = p.index.firstFit(j.req) >= 0 && p.loadAdmits(j.req)
	}
	promised := map[*jobState]int64{} // trainers each taker will grow by
	reserved := map[int32]vec{}       // per node, room promised to takers
	exhausted := map[*jobState]bool{} // givers whose trainers free no room a taker fits in
	load := p.growLoad
	for _, level := range levels {
		jobs := byPriority[level]
		for {
			giver, taker := p.pair(jobs, promised, exhausted)
			if giver == nil || taker == nil {
				break
			}
			gf, tf := giver.fulfillment(), taker.fulfillmentAt(taker.placed+promised[taker])
			if gf-tf <= gap {
				break
			}
			// After the move the giver must still be at least as fulfilled
			// as the taker, or the next plan would move the trainer back.
			if fulfillmentAt(giver, giver.placed-1, taker, taker.placed+promised[taker]+1) < 0 {
				break
			}
			v := &giver.victims[giver.next]
			n := p.nodeOf(giver, v)
			if n < 0 || !taker.req.fitsIn(p.free[n].plus(v.req).minus(reserved[n])) {
				// The taker's trainer would not fit where this one leaves:
				// the giver's capacity is of no use to it.
				exhausted[giver] = true
				continue
			}
			after := load.minus(v.req).plus(taker.req)
			if !p.admits(after, taker.req) {
				break
			}
			if giver.rebalanceTo == nil {
				giver.rebalanceFrom, giver.rebalancePlaced = gf, giver.placed
				giver.rebalanceTo, giver.rebalanceToF = taker, tf
			}
			reserved[n] = reserved[n].plus(taker.req)
			load = after
			p.removeNext(giver)
			giver.rebalanced++
			promised[taker]++
		}
	}
}

// pair returns the most fulfilled job that can give a running trainer (and
// is not exhausted) and the least fulfilled other one that can grow, counting
// the trainers promised to it in this phase.
func (p *planner) pair(jobs []*jobState, promised map[*jobState]int64, exhausted map[*jobState]bool) (giver, taker *jobState) {
	for _, j := range jobs {
		if j.slack() > 0 && j.victims[j.next].bound && promised[j] == 0 && !exhausted[j] && (giver == nil || fulfillmentCmp(j, giver) > 0 || (fulfillmentCmp(j, giver) == 0 && j.key < giver.key)) {
			giver = j
		}
	}
	for _, j := range jobs {
		if j == giver || j.rebalanced > 0 || j.growsFromIdle || j.coolingDown || j.unschedulable || j.starved || j.desired+promised[j] >= j.max {
			continue
		}
		if taker == nil {
			taker = j
			continue
		}
		c := fulfillmentAt(j, j.placed+promised[j], taker, taker.placed+promised[taker])
		if c < 0 || (c == 0 && j.key < taker.key) {
			taker = j
		}
	}
	return giver, taker
}

// admits reports whether load keeps every resource req asks for within the
// threshold.
func (p *planner) admits(load, req vec) bool {
	for r := range numRes {
		if req[r] > 0 && p.exceeds(load[r], r) {
			return false
		}
	}
	return true
}

func (p *planner) rebalanceGap() float64 {
	if gap := p.opts.RebalanceGap; gap > 0 && gap <= 1 {
		return gap
	}
	if p.opts.RebalanceGap > 1 {
		return 1
	}
	return DefaultRebalanceGap
}
