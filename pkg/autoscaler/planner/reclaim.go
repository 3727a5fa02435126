package planner

// moves is what the moves of one plan's rebalancing and reclaim have done
// so far: per node, the room they freed and the room they promised to
// takers (made at the first move: a taker is promised only room givers
// free, since idle room next to it is growth's to hand out in the next
// plan, before the giver's trainer has gone); each pool's growth load with
// the moves (a giver and its taker share the node, so the pool); how
// many trainers moved; and how many the phase moving them may reach
// (rebalanceMoves, then Options.MaxRebalancePerCycle for reclaim).
type moves struct {
	freed, reserved []vec
	load            []vec
	count, limit    int32
	phase           string // "rebalancing" or "reclaim", for the explanations
}

func (p *plan) newMoves() *moves {
	m := &moves{load: make([]vec, len(p.pools))}
	for i := range p.pools {
		m.load[i] = p.pools[i].growLoad
	}
	return m
}

// moveOutcome is what one try to move a trainer from a giver to a taker did.
type moveOutcome uint8

const (
	movedOne        moveOutcome = iota
	noRoomForTaker              // the taker's trainer would not fit where the giver's leaves
	takerOutOfQuota             // the taker's namespace has no quota for one more
	overLoad                    // the pool would pass MaxLoadDesired
	capped                      // the plan moved the trainers its phase may move already
)

// mayGive reports whether j has a trainer above its minimum that runs on a
// node and was promised nothing.
func (j *jobState) mayGive() bool {
	return j.slack() > 0 && j.victims[j.next].bound && j.promised == 0 && !j.resizeHeld
}

// mayTake reports whether j could take one more trainer that growth would
// not give it from idle room.
func (j *jobState) mayTake() bool {
	return !j.growsFromIdle && !j.coolingDown && !j.resizeHeld && !j.unschedulable && !j.starved && j.desired+j.promised < j.max
}

// aheadOf are the jobs of a priority above priority that growth could grow:
// room freed where one of them could grow would go to it, not to a taker.
func (p *plan) aheadOf(priority int32) []*jobState {
	var ahead []*jobState
	for _, j := range p.movable {
		if j.priority > priority && p.mayGrow(j) {
			ahead = append(ahead, j)
		}
	}
	return ahead
}

// move moves the giver's next trainer to the taker when the taker's trainer
// fits where it leaves, within the taker's quota and MaxLoadDesired: the
// giver's trainer goes in this plan, and the taker is promised one more,
// added to its desired count once rebalancing is done.
func (p *plan) move(m *moves, giver, taker *jobState, ahead []*jobState) moveOutcome {
	v := &giver.victims[giver.next]
	n := p.nodeOf(giver, v)
	// The room the giver's trainers free, and no more than the node will
	// have free once they are gone (a node whose pods ask more than it
	// holds has less).
	room := v.req
	var avail vec
	if n >= 0 {
		avail = p.free[n].plus(v.req)
		if m.reserved != nil {
			room = room.plus(m.freed[n]).minus(m.reserved[n])
			avail = avail.minus(m.reserved[n])
		}
	}
	if n < 0 || !taker.elig.has(n, p.classes.classOf[n]) || !taker.req.fitsIn(room) || !taker.req.fitsIn(avail) ||
		takesFirst(ahead, n, room, p) {
		return noRoomForTaker
	}
	if !p.quotaAllows(taker, taker.promised+1) {
		return takerOutOfQuota
	}
	pi := p.poolOf[p.classes.classOf[n]]
	after := m.load[pi].minus(v.req).plus(taker.req)
	if !p.admits(&p.pools[pi], after, taker.req) {
		return overLoad
	}
	if m.limit > 0 && m.count >= m.limit {
		taker.capped, taker.cappedAt, taker.cappedIn = giver, m.limit, m.phase
		return capped
	}
	m.count++
	if giver.rebalanceTo == nil {
		giver.rebalanceFrom, giver.rebalancePlaced = giver.fulfillment(), giver.placed
		giver.rebalanceTo, giver.rebalanceToF = taker, taker.fulfillmentAt(taker.placed+taker.promised)
		giver.rebalanceToAt = taker.placed + taker.promised
	}
	if m.reserved == nil {
		m.freed, m.reserved = make([]vec, len(p.free)), make([]vec, len(p.free))
	}
	m.freed[n] = m.freed[n].plus(v.req)
	m.reserved[n] = m.reserved[n].plus(taker.req)
	m.load[pi] = after
	// Growth's load keeps this plan's removals; the taker's trainer
	// replaces the giver's in it.
	p.expect(int(n), taker.req.minus(v.req))
	p.removeNext(giver)
	giver.rebalanced++
	if taker.promisedBy == nil {
		taker.promisedBy = giver
	}
	taker.promised++
	taker.nodes = append(taker.nodes, p.nodes[n].Name)
	if giver.team != nil && taker.team != nil {
		giver.team.used = giver.team.used.minus(v.req)
		taker.team.used = taker.team.used.plus(taker.req)
	}
	return movedOne
}

// reclaim takes a team's share back from the teams that borrowed it: while,
// in a pool and priority, a team below its deserved share has a job that
// could take a trainer, the team that uses the most of its own share gives
// back a trainer above a job's minimum — its most fulfilled job's first —
// where the taker's fits, provided that afterwards the taker's team still
// uses no more of its share than the giver's (else the next plan would
// move it back). The giver is most often above its share; it may be below
// it too, when the shares add up to more than the trainers can use (nodes
// whose last CPUs no trainer fits): the teams then end at the same part of
// their shares, which is the weighted fair split of what can be used. No
// job is stopped and none goes below its minimum: a borrowed share comes
// back by shrinking trainers alone.
func (p *plan) reclaim(m *moves) {
	if p.teams == nil {
		return
	}
	m.limit, m.phase = p.opts.MaxRebalancePerCycle, "rebalancing and reclaim"
	levels, byLevel := p.levels(false)
	for _, l := range levels {
		ahead := p.aheadOf(l.priority)
		jobs := byLevel[l]
		noRoom := map[*jobState]bool{} // givers whose room no taker can use
		noTake := map[*jobState]bool{} // takers that cannot take
		for {
			giver, taker := p.reclaimPair(jobs, noRoom, noTake)
			if giver == nil || taker == nil {
				break
			}
			// No reversal: the taker's team after the move must not be
			// further above its share than the giver's.
			if taker.team.belowWith(taker.team.used.plus(taker.req)) > giver.team.belowWith(giver.team.used.minus(giver.victims[giver.next].req)) {
				break
			}
			gNote, tNote := teamNote(giver.team), teamNote(taker.team)
			switch p.move(m, giver, taker, ahead) {
			case noRoomForTaker:
				noRoom[giver] = true
				continue
			case takerOutOfQuota:
				noTake[taker] = true
				continue
			case movedOne:
				if giver.teamNote == "" {
					giver.teamNote, giver.reclaimWith = gNote, taker
				}
				if taker.teamNote == "" {
					taker.teamNote, taker.reclaimWith = tNote, giver
				}
				continue
			}
			return // over the load threshold, or capped
		}
	}
}

// reclaimPair is the next move of reclaim among jobs: the most fulfilled
// job that may give, of the team that uses the most of its deserved share,
// and the least fulfilled job that may take, of the team below its share
// that uses the least of it; nil when there is no such pair of two teams,
// the giver's using more of its share than the taker's.
func (p *plan) reclaimPair(jobs []*jobState, noRoom, noTake map[*jobState]bool) (giver, taker *jobState) {
	for _, j := range jobs {
		b := j.team.below()
		if j.mayGive() && !noRoom[j] {
			if giver == nil || b > giver.team.below() || (b == giver.team.below() && giveFirst(j, giver)) {
				giver = j
			}
		}
		if b < 1 && j.mayTake() && !noTake[j] && j.rebalanced == 0 && !j.addsTooLittleAt(j.placed+j.promised) {
			if taker == nil || b < taker.team.below() || (b == taker.team.below() && takeFirst(j, taker)) {
				taker = j
			}
		}
	}
	if giver == nil || taker == nil || giver.team == taker.team || giver.team.below() <= taker.team.below() {
		return nil, nil
	}
	return giver, taker
}

// level is the jobs that compete for one room: of a pool and a priority
// and, when byTeam, of one team.
type level struct {
	pool     *pool
	priority int32
	team     *teamState
}

// levels groups the movable jobs by level, the levels in the order their
// first jobs come.
func (p *plan) levels(byTeam bool) ([]level, map[level][]*jobState) {
	byLevel := map[level][]*jobState{}
	var levels []level
	for _, j := range p.movable {
		l := level{pool: j.pool, priority: j.priority}
		if byTeam && j.team != nil {
			l.team = j.team.team
		}
		if _, seen := byLevel[l]; !seen {
			levels = append(levels, l)
		}
		byLevel[l] = append(byLevel[l], j)
	}
	return levels, byLevel
}
