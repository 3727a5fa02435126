package planner

import (
	"container/heap"
	"math"
	"slices"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// Team is a team's claim on the cluster, read from its TrainingQueue: the
// namespaces whose jobs are its, its weight in the fair share (below 1: 1),
// what its minimums are guaranteed and the most it may use (0 or
// snapshot.Unlimited in a dimension without a limit).
type Team struct {
	Name       string
	Namespaces []string
	Weight     int32
	Guarantee  Resources
	Limit      Resources
}

// TeamShare is a team's share after a plan, summed over the pools: what it
// deserves and what its jobs' pods use, for its TrainingQueue's status.
type TeamShare struct {
	Team     string
	Deserved Resources
	Used     Resources
}

// teamState is a team in one plan.
type teamState struct {
	name             string
	weight           float64
	guarantee, limit vec
	// pools are its share of each pool its jobs run in.
	pools map[*pool]*teamPool
	// admitUsed is what its pods use of the whole cluster as admission
	// goes, and admitDeserved its share of it ([plan.countTeamUse]).
	admitUsed, admitDeserved vec
}

// teamPool is one team's share of one pool: what it deserves there, uses,
// and would use, and its jobs waiting for a trainer, for growth.
type teamPool struct {
	team                     *teamState
	capacity                 vec // what the pool has for the teams
	deserved, used, demanded vec
	line                     *jobHeap
}

// below orders how far a group is from its deserved share: used over
// deserved on the dominant resource; a group that deserves nothing comes
// last.
func (g *teamPool) below() float64 { return g.belowWith(g.used) }

// belowWith is below had the group used used.
func (g *teamPool) belowWith(used vec) float64 {
	d := dominantShare(g.deserved, g.capacity)
	if !(d > 0) {
		return math.Inf(1)
	}
	return dominantShare(used, g.capacity) / d
}

// buildTeams places every job in its namespace's team; without
// Options.Teams there are none, and growth serves jobs as before teams
// existed. A namespace no Team names is the default team's, of weight 1.
func (p *plan) buildTeams() {
	if len(p.opts.Teams) == 0 {
		return
	}
	p.teamOf = map[string]*teamState{}
	unlimited := vec{snapshot.Unlimited, snapshot.Unlimited, snapshot.Unlimited}
	for _, t := range p.opts.Teams {
		ts := &teamState{name: t.Name, weight: float64(max(t.Weight, 1)), guarantee: vecOf(t.Guarantee), limit: vecOf(t.Limit)}
		for r := range numRes {
			if ts.limit[r] <= 0 {
				ts.limit[r] = snapshot.Unlimited
			}
		}
		p.teams = append(p.teams, ts)
		for _, ns := range t.Namespaces {
			p.teamOf[ns] = ts
		}
	}
	p.defaultTeam = &teamState{name: v1.DefaultTeam, weight: float64(v1.DefaultQueueWeight), limit: unlimited}
	p.teams = append(p.teams, p.defaultTeam)
}

// teamOfNS is the team of namespace ns.
func (p *plan) teamOfNS(ns string) *teamState {
	if t := p.teamOf[ns]; t != nil {
		return t
	}
	return p.defaultTeam
}

// shareOut works out each team's deserved share of each pool from what
// its jobs use and would use once placement, admission and the phases that
// shrink are done, just before rebalancing and growth.
func (p *plan) shareOut(queue Queue) {
	if p.teams == nil {
		return
	}
	group := func(t *teamState, pl *pool) *teamPool {
		if t.pools == nil {
			t.pools = map[*pool]*teamPool{}
		}
		g := t.pools[pl]
		if g == nil {
			g = &teamPool{team: t, line: &jobHeap{less: growFirst}}
			t.pools[pl] = g
		}
		return g
	}
	for _, j := range slices.Concat(p.jobs, p.arriving) {
		g := group(p.teamOfNS(j.ns), j.pool)
		j.team = g
		use := scaled(j.req, j.placed)
		for _, s := range p.snap.Servers[j.key] {
			use = use.plus(vecOf(s.Request))
		}
		g.used = g.used.plus(use)
		g.demanded = g.demanded.plus(use)
		if j.movable && j.max > j.placed {
			g.demanded = g.demanded.plus(scaled(j.req, j.max-j.placed))
		}
	}
	for i := range queue.Jobs {
		q := &queue.Jobs[i]
		if p.byKey[q.Key] != nil || p.stopped[q.Key] {
			continue
		}
		for _, s := range q.Pods {
			g := group(p.teamOfNS(namespaceOf(q.Key)), p.poolOfSet(p.classes.set(s.Placement)))
			g.demanded = g.demanded.plus(scaled(vecOf(s.Request), int64(s.Count)))
		}
	}
	pools := map[*pool][]*teamPool{}
	for _, t := range p.teams {
		for pl, g := range t.pools {
			pools[pl] = append(pools[pl], g)
		}
	}
	for pl, groups := range pools {
		slices.SortFunc(groups, func(a, b *teamPool) int { return cmpString(a.team.name, b.team.name) })
		var teamsUse vec
		for _, g := range groups {
			teamsUse = teamsUse.plus(g.used)
		}
		var capacity vec
		for r := range numRes {
			others := max(0, pl.growLoad[r]-teamsUse[r]) // pods of no team: web services, daemons
			capacity[r] = max(0, int64(float64(pl.total[r])*p.threshold)-others)
		}
		claims := make([]teamClaim, len(groups))
		for i, g := range groups {
			g.capacity = capacity
			claims[i] = teamClaim{weight: g.team.weight, demand: g.demanded,
				guarantee: p.partOf(g, g.team.guarantee), limit: p.partOf(g, g.team.limit)}
		}
		for i, d := range deserve(capacity, claims) {
			groups[i].deserved = d
		}
	}
}

// partOf is the part of a team-wide amount (its guarantee or limit) that
// applies in g's pool: all of it when the team asks for one pool only, else
// in proportion to what it asks for in each.
func (p *plan) partOf(g *teamPool, whole vec) vec {
	var total vec
	for _, o := range g.team.pools {
		total = total.plus(o.demanded)
	}
	var out vec
	for r := range numRes {
		switch {
		case whole[r] == snapshot.Unlimited || len(g.team.pools) == 1:
			out[r] = whole[r]
		case total[r] > 0:
			out[r] = int64(float64(whole[r]) * float64(g.demanded[r]) / float64(total[r]))
		}
	}
	return out
}

// Shares are the teams' shares after the plan, by team name.
func (p *plan) shares() []TeamShare {
	out := make([]TeamShare, 0, len(p.teams))
	for _, t := range p.teams {
		var deserved, used vec
		for _, g := range t.pools {
			deserved, used = deserved.plus(g.deserved), used.plus(g.used)
		}
		out = append(out, TeamShare{Team: t.name, Deserved: deserved.resources(), Used: used.resources()})
	}
	slices.SortFunc(out, func(a, b TeamShare) int { return cmpString(a.Team, b.Team) })
	return out
}

func scaled(v vec, n int64) vec { return vec{v[0] * n, v[1] * n, v[2] * n} }

// growLine is the order growth serves the jobs in. Without teams it is one
// heap in growFirst order. With teams it is a heap of (team, pool) groups,
// each holding its jobs in growFirst order: the group whose first job has
// the highest priority first, then the group furthest below its deserved
// share, so that growth goes to the team furthest below its share and,
// within it, to the least fulfilled job.
type growLine struct {
	jobs   *jobHeap
	groups []*teamPool
}

func newGrowLine(jobs []*jobState, teams bool) *growLine {
	l := &growLine{}
	if !teams {
		l.jobs = &jobHeap{items: jobs, less: growFirst}
		heap.Init(l.jobs)
		return l
	}
	for _, j := range jobs {
		g := j.team
		if len(g.line.items) == 0 {
			l.groups = append(l.groups, g)
		}
		g.line.items = append(g.line.items, j)
	}
	for _, g := range l.groups {
		heap.Init(g.line)
	}
	heap.Init(l)
	return l
}

// top is the job to serve next.
func (l *growLine) top() *jobState {
	if l.jobs != nil {
		return l.jobs.items[0]
	}
	return l.groups[0].line.items[0]
}

// runnerUp is the job next in line after the top one within its heap
// (without teams, the whole line; with teams, the top team's): nil when
// none waits.
func (l *growLine) runnerUp() *jobState {
	h := l.jobs
	if h == nil {
		h = l.groups[0].line
	}
	var best *jobState
	for _, i := range []int{1, 2} {
		if i < len(h.items) && (best == nil || h.less(h.items[i], best)) {
			best = h.items[i]
		}
	}
	return best
}

// empty reports whether no job waits.
func (l *growLine) empty() bool {
	if l.jobs != nil {
		return l.jobs.Len() == 0
	}
	return len(l.groups) == 0
}

// pop lets the top job go.
func (l *growLine) pop() {
	if l.jobs != nil {
		heap.Pop(l.jobs)
		return
	}
	g := l.groups[0]
	heap.Pop(g.line)
	if g.line.Len() == 0 {
		heap.Pop(l)
		return
	}
	heap.Fix(l, 0)
}

// grew puts the top job back in line after it got a trainer of request
// req, which its team now uses.
func (l *growLine) grew(req vec) {
	if l.jobs != nil {
		heap.Fix(l.jobs, 0)
		return
	}
	g := l.groups[0]
	g.used = g.used.plus(req)
	heap.Fix(g.line, 0)
	heap.Fix(l, 0)
}

// The heap of groups.
func (l *growLine) Len() int { return len(l.groups) }
func (l *growLine) Less(i, k int) bool {
	a, b := l.groups[i], l.groups[k]
	ja, jb := a.line.items[0], b.line.items[0]
	if ja.priority != jb.priority {
		return ja.priority > jb.priority
	}
	if ba, bb := a.below(), b.below(); ba != bb {
		return ba < bb
	}
	return growFirst(ja, jb)
}
func (l *growLine) Swap(i, k int) { l.groups[i], l.groups[k] = l.groups[k], l.groups[i] }
func (l *growLine) Push(x any)    { l.groups = append(l.groups, x.(*teamPool)) }
func (l *growLine) Pop() any {
	x := l.groups[len(l.groups)-1]
	l.groups = l.groups[:len(l.groups)-1]
	return x
}
