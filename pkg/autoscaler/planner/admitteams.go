package planner

import (
	"slices"
	"strings"
)

// admitLine is the order admit serves the queue in: the highest priority
// first; then, with teams, the job of the team that uses the least of the
// cluster for its weight, so that a team below its share starts before one
// above it; then the job that entered the queue first, then by key. A
// team's use grows as its jobs are admitted, so the line is drawn one job at
// a time. Without teams it is queueOrder.
type admitLine struct {
	p     *plan
	order []int                // queueOrder
	rank  []int                // rank[i] is job i's place in order
	teams map[*teamState][]int // with teams: each team's jobs, in order
}

func (p *plan) newAdmitLine(jobs []QueuedJob) *admitLine {
	l := &admitLine{p: p, order: queueOrder(jobs)}
	if p.teams == nil {
		return l
	}
	l.rank = make([]int, len(jobs))
	l.teams = map[*teamState][]int{}
	for k, i := range l.order {
		l.rank[i] = k
		t := p.teamOfNS(namespaceOf(jobs[i].Key))
		l.teams[t] = append(l.teams[t], i)
	}
	return l
}

// next is the index of the next job to consider; false when none is left.
func (l *admitLine) next(jobs []QueuedJob) (int, bool) {
	if l.teams == nil {
		if len(l.order) == 0 {
			return 0, false
		}
		i := l.order[0]
		l.order = l.order[1:]
		return i, true
	}
	var best *teamState
	for t, line := range l.teams {
		if best == nil || l.before(jobs, line[0], t, l.teams[best][0], best) {
			best = t
		}
	}
	if best == nil {
		return 0, false
	}
	i := l.teams[best][0]
	if l.teams[best] = l.teams[best][1:]; len(l.teams[best]) == 0 {
		delete(l.teams, best)
	}
	return i, true
}

// before reports whether job i of team t goes before job k of team u.
func (l *admitLine) before(jobs []QueuedJob, i int, t *teamState, k int, u *teamState) bool {
	if a, b := jobs[i].Priority, jobs[k].Priority; a != b {
		return a > b
	}
	if a, b := l.p.weightedUse(t), l.p.weightedUse(u); a != b {
		return a < b
	}
	return l.rank[i] < l.rank[k]
}

// weightedUse is the dominant share of the cluster a team's pods use, over
// its weight: the order of teams from furthest below a weighted fair share
// to furthest above it.
func (p *plan) weightedUse(t *teamState) float64 {
	if t == nil {
		return 0
	}
	return dominantShare(t.admitUsed, p.clusterCap) / t.weight
}

// countTeamUse sums, before admission, what each team's pods use of the
// cluster (its jobs' placed trainers and their pservers and masters), and
// what each team deserves of it, from what it uses and asks for: the order
// of the queue, and the bound on preemption across teams.
func (p *plan) countTeamUse(queue Queue) {
	if p.teams == nil {
		return
	}
	for _, n := range p.nodes {
		p.clusterCap = p.clusterCap.plus(vecOf(n.Allocatable))
	}
	demand := map[*teamState]vec{}
	for _, j := range p.jobs {
		t := p.teamOfNS(j.ns)
		use := scaled(j.req, j.placed)
		t.admitUsed = t.admitUsed.plus(use)
		demand[t] = demand[t].plus(use)
		if j.movable && j.max > j.placed {
			demand[t] = demand[t].plus(scaled(j.req, j.max-j.placed))
		}
	}
	// The bound pods of every job that holds room: the pservers and masters
	// of all, the trainers of those the plan does not scale.
	bound := func(key string, pods []TrainerPod) {
		t := p.teamOfNS(namespaceOf(key))
		for _, h := range p.boundRoom(pods, nil) {
			t.admitUsed = t.admitUsed.plus(h.req)
			demand[t] = demand[t].plus(h.req)
		}
	}
	for key, pods := range p.snap.Servers {
		bound(key, pods)
	}
	for key, pods := range p.snap.Trainers {
		if p.byKey[key] == nil {
			bound(key, pods)
		}
	}
	for i := range queue.Jobs {
		q := &queue.Jobs[i]
		t := p.teamOfNS(namespaceOf(q.Key))
		for _, s := range q.Pods {
			demand[t] = demand[t].plus(scaled(vecOf(s.Request), int64(s.Count)))
		}
	}
	var capacity vec
	for r := range numRes {
		capacity[r] = int64(float64(p.clusterCap[r]) * p.threshold)
	}
	claims := make([]teamClaim, len(p.teams))
	for i, t := range p.teams {
		claims[i] = teamClaim{weight: t.weight, demand: demand[t], guarantee: t.guarantee, limit: t.limit}
	}
	for i, d := range deserve(capacity, claims) {
		p.teams[i].admitDeserved = d
	}
}

// mayStopAcrossTeams reports whether queued job q may stop running job r
// whole when they are of different teams: only for a team whose use with
// q's minimum stays within its guarantee, and never a job whose team is at
// or below its own share. Within a team, and without teams, priority alone
// decides.
func (p *plan) mayStopAcrossTeams(q *QueuedJob, need vec, r *RunningJob) bool {
	if p.teams == nil {
		return true
	}
	t, u := p.teamOfNS(namespaceOf(q.Key)), p.teamOfNS(namespaceOf(r.Key))
	if t == u {
		return true
	}
	return withinGuarantee(t.admitUsed.plus(need), t.guarantee) && u.admitUsed.exceeds(u.admitDeserved)
}

// withinGuarantee reports whether use is within a guarantee in every
// resource the guarantee names; a team with no guarantee has none to be
// within.
func withinGuarantee(use, guarantee vec) bool {
	named := false
	for r := range numRes {
		if guarantee[r] > 0 {
			named = true
			if use[r] > guarantee[r] {
				return false
			}
		}
	}
	return named
}

// teamHead is the head of one team's queue and the room kept for it.
type teamHead struct {
	team *teamState
	*reservation
}

// headsOver are the heads whose nodes a job of team t may not use: its own
// team's, and those of the teams that use less of the cluster for their
// weight than t. One team's big job does not hold the other teams' queues
// while they use no more than its team, and cannot be starved by them
// either: once a team uses more, the heads of the teams below it hold it.
// Without teams there is one head, which holds every job.
func (p *plan) headsOver(heads []teamHead, t *teamState) []teamHead {
	var out []teamHead
	for _, h := range heads {
		if h.team == t || p.weightedUse(h.team) < p.weightedUse(t) {
			out = append(out, h)
		}
	}
	return out
}

// restrictAll takes the nodes of every head in heads out of the nodes the
// pods may use.
func restrictAll(p *plan, heads []teamHead, pods []gangPod) []gangPod {
	for _, h := range heads {
		pods = h.restrict(p, pods)
	}
	return pods
}

// headOf is the head of team t's queue, if it has one.
func headOf(heads []teamHead, t *teamState) *reservation {
	if i := slices.IndexFunc(heads, func(h teamHead) bool { return h.team == t }); i >= 0 {
		return heads[i].reservation
	}
	return nil
}

// headNames names the jobs the heads keep room for.
func headNames(heads []teamHead) string {
	names := make([]string, len(heads))
	for i, h := range heads {
		names[i] = h.job
	}
	return strings.Join(names, ", ")
}

// exceeds reports whether v is above w in some resource.
func (v vec) exceeds(w vec) bool { return !v.fitsIn(w) }
