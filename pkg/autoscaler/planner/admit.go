package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// gangPod is one pod of a queued job's minimum as the planner places it.
type gangPod struct {
	role     string
	req, lim vec
	elig     *eligible
}

// admitFor notes, on a job that gave trainers for admissions, the queued
// jobs they were given for (for the reason).
type admitFor struct {
	key      string
	need     vec
	priority int32
}

// admit admits queued jobs in order — the highest priority first, then, with
// teams, the team that uses the least of the cluster for its weight, then
// the oldest, then by key ([admitLine]). A job is admitted when its whole minimum fits its
// namespace's quota and, at once, on nodes its pods may use: first in the
// room nobody holds or waits for (after reserve and yieldToPods served
// what waits for a node, which comes first), else by taking trainers above
// their minimum from running jobs of a lower or its own priority, the
// minimum rule's way (makeRoomAt), else, with Options.Preemption, by stopping
// whole the fewest running jobs of a lower priority ([plan.preempt]). A job that
// does not fit takes nothing, not even what a part of it would fit in, and
// waits.
//
// The first job that waits for room on nodes is the head of the queue: the
// nodes it could use are reserved for it, and the jobs behind it are
// admitted only onto other nodes, so that a stream of small jobs cannot
// keep it waiting ([plan.reserveFor]). With teams each team's queue has a
// head, which holds its own team's jobs and those of teams that use more
// of the cluster for their weight than its team ([plan.headsOver]); and a
// running job of another team is stopped whole only as
// [plan.mayStopAcrossTeams] allows. The first job of each namespace that
// waits holds its minimum's share of the namespace's quota the same way.
// A job that can never start as things stand — its minimum above a quota's
// hard limit, a pod of it bigger than every node it may use, or one the API
// server would refuse (PodSet.Refused) — holds no
// reservation. The room and quota an admitted job takes are withheld from
// growth.
func (p *plan) admit(queue Queue) (admitted []Admission, waiting []Waiting, preempted []Preemption) {
	jobs := queue.Jobs
	p.countTeamUse(queue)
	var heads []teamHead
	quotaHeld := map[string]bool{}
	var undo func() // puts back the trainers yieldQuota took for the job being admitted
	line := p.newAdmitLine(jobs)
	for i, more := line.next(jobs); more; i, more = line.next(jobs) {
		q := &jobs[i]
		ns := namespaceOf(q.Key)
		team := p.teamOfNS(ns)
		pods, need, what, ok := p.gangOf(q)
		use := gangUse(pods)
		w := Waiting{Job: q.Key, Kind: v1.ReasonWaitingForAdmission}
		switch {
		case refused(q) != "":
			w.Kind, w.Reason = v1.ReasonWillBeRefused, refused(q)
		case q.UncountedQuota != "" && q.UncountedQuotaHard:
			w.Kind, w.Reason = v1.ReasonExceedsQuota, q.UncountedQuota
		case q.UncountedQuota != "":
			w.Kind, w.Reason = v1.ReasonWaitingForQuota, q.UncountedQuota
		case !ok:
			w.Reason = fmt.Sprintf("its minimum, %s, has a negative request", what)
		case p.aboveHard(ns, use) != "":
			w.Kind, w.Reason = v1.ReasonExceedsQuota, fmt.Sprintf("its minimum, %s, %s", what, p.aboveHard(ns, use))
		case !p.placeableEmpty(pods):
			w.Kind, w.Reason = v1.ReasonUnplaceable, fmt.Sprintf("its minimum, %s, needs %s; %s", what, need.resources(), p.unplaceable(pods))
		case p.quotaShort(ns, use) != "" && !p.quotaYields(q, ns, use, &undo):
			w.Kind, w.Reason = v1.ReasonWaitingForQuota, p.quotaShort(ns, use)
		default:
			over := p.headsOver(heads, team)
			restricted := restrictAll(p, over, pods)
			reason, fits := p.fitGang(q, restricted, need, what)
			if !fits && p.opts.Preemption {
				var stopped []Preemption
				if r, ok := p.preempt(q, restricted, need, what, queue.Running); ok {
					reason, fits, stopped = r.reason, true, r.victims
				}
				preempted = append(preempted, stopped...)
			}
			if fits {
				p.spendQuota(ns, use)
				if team != nil {
					team.admitUsed = team.admitUsed.plus(need)
				}
				admitted = append(admitted, Admission{Job: q.Key, Reason: reason})
				undo = nil
				continue
			}
			if undo != nil {
				undo() // the quota it took back is of no use while the nodes have no room
				undo = nil
			}
			w.Reason = reason
			switch {
			case len(over) > 0 && p.fitsUnreserved(pods):
				w.Kind = v1.ReasonReservedForHead
				w.Reason = fmt.Sprintf("its minimum, %s, needs %s and would fit, but only on nodes kept for %s, ahead in the queue",
					what, need.resources(), headNames(over))
			case headOf(heads, team) == nil:
				heads, w.Head = append(heads, teamHead{team: team, reservation: p.reserveFor(q.Key, pods)}), true
			}
		}
		if w.Kind != v1.ReasonExceedsQuota && w.Kind != v1.ReasonUnplaceable && w.Kind != v1.ReasonWillBeRefused && ok && !quotaHeld[ns] {
			quotaHeld[ns] = true
			p.spendQuota(ns, use)
		}
		waiting = append(waiting, w)
	}
	for k := range waiting {
		waiting[k].Position, waiting[k].Of = k+1, len(waiting)
		waiting[k].Reason = fmt.Sprintf("position %d of %d in the queue: %s", k+1, len(waiting), waiting[k].Reason)
	}
	return admitted, waiting, preempted
}

// reserveUnplaced keeps room for the pods of TrainingJobs that the
// scheduler has not tried yet — most of all those of a job admitted by an
// earlier plan, whose gates were just removed — where they fit, so that the
// room is neither admitted to another job nor grown into before they are
// placed. The gated pods of the jobs still queued hold nothing, and the
// trainers of the planned jobs are accounted as the jobs' own.
func (p *plan) reserveUnplaced(unplaced []snapshot.PendingPod, queue []QueuedJob) {
	if len(unplaced) == 0 {
		return
	}
	queued := make(map[string]bool, len(queue))
	for _, q := range queue {
		queued[q.Key] = true
	}
	for i := range unplaced {
		pod := &unplaced[i]
		if queued[pod.Job] {
			continue
		}
		if _, planned := p.byKey[pod.Job]; planned && pod.Trainer {
			continue
		}
		req := vecOf(pod.Request)
		if req.negative() {
			continue
		}
		if n := p.fit.firstFit(req, p.classes.set(pod.Placement)); n >= 0 {
			p.fit.take(n, req)
			p.expect(n, req)
		}
	}
}

// reserveStarting keeps room, where they fit, for the pods of jobs admitted
// by an earlier plan that the ReplicaSet controller has not created yet, so
// that the room is neither admitted to another job nor grown into first.
func (p *plan) reserveStarting(starting []QueuedJob) {
	for i := range starting {
		pods, _, _, ok := p.gangOf(&starting[i])
		if !ok {
			continue
		}
		// Pods not created yet are not in the quota's used figures either.
		p.spendQuota(namespaceOf(starting[i].Key), gangUse(pods))
		for _, g := range pods {
			if n := p.fit.firstFit(g.req, g.elig); n >= 0 {
				p.fit.take(n, g.req)
				p.expect(n, g.req)
			}
		}
	}
}

// queueOrder returns the indexes of the queued jobs in admission order,
// without duplicate keys (a caller's mistake: the first in that order
// counts).
func queueOrder(queue []QueuedJob) []int {
	order := make([]int, len(queue))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &queue[a], &queue[b]
		return cmp.Or(cmp.Compare(y.Priority, x.Priority), x.Created.Compare(y.Created), strings.Compare(x.Key, y.Key))
	})
	seen := make(map[string]bool, len(order))
	return slices.DeleteFunc(order, func(i int) bool {
		dup := seen[queue[i].Key]
		seen[queue[i].Key] = true
		return dup
	})
}

// gangOf lists the pods of a queued job's minimum, the largest first (first
// fit decreasing packs best), with their total request and a description;
// ok is false when a request is negative.
func (p *plan) gangOf(q *QueuedJob) (pods []gangPod, need vec, what string, ok bool) {
	var parts []string
	ok = true
	for _, s := range q.Pods {
		if s.Count <= 0 {
			continue
		}
		parts = append(parts, plural(int(s.Count), s.Role))
		req := vecOf(s.Request)
		if req.negative() {
			ok = false
		}
		elig := p.classes.set(s.Placement)
		for range s.Count {
			pods = append(pods, gangPod{role: s.Role, req: req, lim: vecOf(s.Limits), elig: elig})
			need = need.plus(req)
		}
	}
	slices.SortStableFunc(pods, func(a, b gangPod) int {
		switch {
		case b.req.less(a.req):
			return -1
		case a.req.less(b.req):
			return 1
		}
		return 0
	})
	what = "no pods"
	if len(parts) > 0 {
		what = strings.Join(parts, ", ")
	}
	return pods, need, what, ok
}

// fitGang places every pod of the gang or none, and explains the outcome.
func (p *plan) fitGang(q *QueuedJob, pods []gangPod, need vec, what string) (string, bool) {
	head := fmt.Sprintf("its minimum, %s, needs %s", what, need.resources())
	miss, placed := p.placeGang(pods, nil, nil)
	if miss < 0 {
		p.expectGang(pods, placed)
		return fmt.Sprintf("%s and fits on %s", head, plural(distinct(placed), "node")), true
	}
	p.unplace(pods, placed)
	why := p.noRoom(pods[miss])
	c := claim{priority: q.Priority, share: true, own: q.Key, admit: q.Key}
	if !p.couldHold(pods[miss].req, pods[miss].elig) || !p.anyYieldable(c) {
		return head + "; " + why, false
	}
	saved := p.save()
	miss, placed = p.placeGang(pods, placed[:0], &c)
	if miss < 0 {
		p.expectGang(pods, placed)
		gave := int64(0)
		for k, j := range p.movable {
			gave += j.shrunk - saved.jobs[k].shrunk
		}
		for k, j := range p.movable {
			if j.shrunk > saved.jobs[k].shrunk {
				j.admitted = append(j.admitted, admitFor{key: q.Key, need: need, priority: q.Priority})
			}
		}
		return fmt.Sprintf("%s and fits on %s once %s above other jobs' minimums give way", head,
			plural(distinct(placed), "node"), plural(int(gave), "trainer")), true
	}
	p.restore(saved)
	why = p.noRoom(pods[miss])
	return head + "; " + why + ", not even where trainers above other jobs' minimums could give way", false
}

// placeGang places the pods in order, each on the first node with room that
// it may use or, with c, on a node makeRoomAt frees for it; it returns the
// index of the first pod that found no room (-1 when all did) and the nodes
// of those placed.
func (p *plan) placeGang(pods []gangPod, placed []int, c *claim) (int, []int) {
	for k := range pods {
		g := &pods[k]
		if n := p.fit.firstFit(g.req, g.elig); n >= 0 {
			p.fit.take(n, g.req)
			placed = append(placed, n)
			continue
		}
		if c == nil {
			return k, placed
		}
		c.elig = g.elig
		n, ok := p.makeRoomAt(*c, g.req)
		if !ok {
			return k, placed
		}
		placed = append(placed, n)
	}
	return -1, placed
}

// expectGang counts the pods placeGang placed in growth's load.
func (p *plan) expectGang(pods []gangPod, placed []int) {
	for k, n := range placed {
		p.expect(n, pods[k].req)
	}
}

// unplace gives back the room placeGang took without evictions.
func (p *plan) unplace(pods []gangPod, placed []int) {
	for k, n := range placed {
		p.fit.set(n, p.free[n].plus(pods[k].req))
	}
}

// anyYieldable reports whether some job may give trainers to c.
func (p *plan) anyYieldable(c claim) bool {
	return slices.ContainsFunc(p.movable, func(j *jobState) bool { return p.yieldable(j, c) })
}

// noRoom explains why a pod of the gang found no room, in the state before
// the gang took any: the most a node it may use has free in each resource,
// and the free room of those nodes in all.
func (p *plan) noRoom(g gangPod) string {
	var most, all vec
	found := false
	visit := func(n int32) {
		f := p.free[n].max0()
		for r := range numRes {
			most[r] = max(most[r], f[r])
		}
		all = all.plus(f)
		found = true
	}
	if g.elig.perNode {
		for _, n := range g.elig.nodes {
			visit(n)
		}
	} else {
		for _, id := range g.elig.classes {
			for _, n := range p.classes.members[id] {
				visit(n)
			}
		}
	}
	switch {
	case !found:
		return fmt.Sprintf("a %s may run on no node", g.role)
	case !p.couldHold(g.req, g.elig):
		return fmt.Sprintf("a %s (%s) is bigger than any node it may use", g.role, g.req.resources())
	}
	return fmt.Sprintf("the nodes a %s (%s) may use have at most %s free on one node, %s in all",
		g.role, g.req.resources(), most.resources(), all.resources())
}

func distinct(nodes []int) int {
	s := slices.Clone(nodes)
	slices.Sort(s)
	return len(slices.Compact(s))
}

// saved is the planner's state before a trial admission that takes trainers,
// so that a gang that does not fit whole takes nothing.
type saved struct {
	free, hold []vec
	requested  []vec // per pool
	waiting    int
	moves      int
	jobs       []jobSaved // per movable job
}

type jobSaved struct {
	next                                       int
	picked                                     int
	desired, shrunk, placed, unscheduledShrunk int64
	nodes                                      int
	yieldNodes, shareNodes, admitNodes         map[int32]bool
}

func (p *plan) save() *saved {
	s := &saved{free: slices.Clone(p.free), hold: slices.Clone(p.hold), requested: p.loadSnapshot(),
		waiting: len(p.waiting), moves: len(p.moves), jobs: make([]jobSaved, len(p.movable))}
	for k, j := range p.movable {
		s.jobs[k] = jobSaved{next: j.next, picked: len(j.picked), desired: j.desired, shrunk: j.shrunk, placed: j.placed,
			unscheduledShrunk: j.unscheduledShrunk, nodes: len(j.nodes),
			yieldNodes: maps.Clone(j.yieldNodes), shareNodes: maps.Clone(j.shareNodes), admitNodes: maps.Clone(j.admitNodes)}
	}
	return s
}

func (p *plan) restore(s *saved) {
	for n := range p.free {
		if p.free[n] != s.free[n] {
			p.fit.set(n, s.free[n])
		}
	}
	copy(p.hold, s.hold)
	p.restoreLoad(s.requested)
	p.waiting = p.waiting[:s.waiting]
	p.undoMoves(s.moves)
	for k, j := range p.movable {
		js := &s.jobs[k]
		j.next, j.desired, j.shrunk, j.placed, j.unscheduledShrunk = js.next, js.desired, js.shrunk, js.placed, js.unscheduledShrunk
		j.nodes = j.nodes[:js.nodes]
		j.picked = j.picked[:js.picked]
		j.yieldNodes, j.shareNodes, j.admitNodes = js.yieldNodes, js.shareNodes, js.admitNodes
	}
}

// admitCause is the cause of j's scale-down for admissions: priority when
// it made room for a job of a higher priority, minimum when only for jobs of
// its own.
func (j *jobState) admitCause() Cause {
	for _, a := range j.admitted {
		if a.priority > j.priority {
			return CausePriority
		}
	}
	return CauseMinimum
}

// admitReason describes the queued jobs j gave trainers above its minimum
// for.
func (p *plan) admitReason(j *jobState) string {
	var need vec
	keys := make([]string, 0, len(j.admitted))
	for _, a := range j.admitted {
		need = need.plus(a.need)
		keys = append(keys, a.key)
	}
	verb := "needs"
	if len(keys) > 1 {
		verb = "need"
	}
	if len(j.admitNodes) == 0 && j.quotaGave > 0 {
		return fmt.Sprintf("the minimum of queued %s (%s) %s %s of namespace %s's quota; trainers above this job's minimum give it back",
			plural(len(keys), "job"), strings.Join(keys, ", "), verb, need.resources(), j.ns)
	}
	return fmt.Sprintf("the minimum of queued %s (%s) %s %s; trainers above this job's minimum make room for it on %s",
		plural(len(keys), "job"), strings.Join(keys, ", "), verb, need.resources(), plural(len(j.admitNodes), "node"))
}
