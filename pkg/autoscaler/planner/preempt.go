package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// candidate is a running job preemption may stop whole, with the room its
// bound pods hold.
type candidate struct {
	in   *RunningJob
	job  *jobState // the planned elastic job, nil for another
	pods []heldRoom
}

// heldRoom is a pod's request on the node it is bound to.
type heldRoom struct {
	node int32
	req  vec
}

// preemptResult is a preemption that lets a queued job in.
type preemptResult struct {
	reason  string
	victims []Preemption
}

// preempt admits the queued job q, whose minimum did not fit even with the
// trainers above the minimums of jobs of its priority and lower (fitGang),
// by stopping whole running jobs of a strictly lower priority: the fewest
// that make it fit, taken lowest priority first, then newest first. Jobs of
// its own priority are never stopped. It reports false, changing nothing,
// when even stopping every candidate would not make it fit.
func (p *plan) preempt(q *QueuedJob, pods []gangPod, need vec, what string, running []RunningJob) (preemptResult, bool) {
	cands, unseen := p.candidates(q, need, running)
	if len(cands) == 0 || unseen {
		return preemptResult{}, false
	}
	saved := p.save()
	var placed []int // where the last try placed the pods
	try := func(victims []*candidate) bool {
		p.restore(saved)
		for _, c := range cands {
			if c.job != nil {
				c.job.stopping = false
			}
		}
		var ok bool
		ok, placed = p.stopAndPlace(q, pods, victims, placed[:0])
		return ok
	}
	// The shortest prefix of the order that makes room, then without each
	// victim that the others make room without, the latest taken first: the
	// fewest, and of those the lowest priorities.
	k := 1
	for ; k <= len(cands); k++ {
		if try(cands[:k]) {
			break
		}
	}
	if k > len(cands) {
		try(nil)
		p.restore(saved)
		return preemptResult{}, false
	}
	chosen := slices.Clone(cands[:k])
	for i := len(chosen) - 1; i >= 0 && len(chosen) > 1; i-- {
		if without := slices.Delete(slices.Clone(chosen), i, i+1); try(without) {
			chosen = without
		}
	}
	if !try(chosen) {
		panic("preempt: a set of victims that made room no longer does") // the trial is deterministic
	}
	for k, j := range p.movable {
		if j.shrunk > saved.jobs[k].shrunk {
			j.admitted = append(j.admitted, admitFor{key: q.Key, need: need, priority: q.Priority})
		}
	}
	keys := make([]string, 0, len(chosen))
	res := preemptResult{}
	for _, c := range chosen {
		keys = append(keys, c.in.Key)
		if j := c.job; j != nil {
			j.preempted, j.preemptedBy, j.preemptedByPriority = true, q.Key, q.Priority
			j.movable = false
			p.movable = slices.DeleteFunc(p.movable, func(m *jobState) bool { return m == j })
		}
		p.stopped[c.in.Key] = true
		if u := p.teamOfNS(namespaceOf(c.in.Key)); u != nil {
			for _, h := range c.pods {
				u.admitUsed = u.admitUsed.minus(h.req)
			}
		}
		res.victims = append(res.victims, Preemption{Job: c.in.Key, Priority: c.in.Priority, By: q.Key, ByPriority: q.Priority,
			Reason: fmt.Sprintf("stopped whole for queued %s of priority %d, whose minimum, %s, needs %s and does not fit even with every job of a lower priority at its minimum; it waits in the queue to start again",
				q.Key, q.Priority, what, need.resources())})
	}
	p.expectGang(pods, placed)
	res.reason = fmt.Sprintf("its minimum, %s, needs %s and fits once %s of a lower priority (%s) %s stopped whole",
		what, need.resources(), plural(len(chosen), "running job"), strings.Join(keys, ", "), map[bool]string{true: "is", false: "are"}[len(chosen) == 1])
	return res, true
}

// stopAndPlace counts the victims' pods as gone and places the pods of q's
// minimum, taking trainers above the minimums of the other jobs of its
// priority and lower where needed.
func (p *plan) stopAndPlace(q *QueuedJob, pods []gangPod, victims []*candidate, placed []int) (bool, []int) {
	for _, c := range victims {
		if c.job != nil {
			c.job.stopping = true
		}
		for _, h := range c.pods {
			p.goes(int(h.node), h.req)
			p.fit.set(int(h.node), p.free[h.node])
		}
	}
	if len(victims) == 0 {
		return false, placed
	}
	c := claim{priority: q.Priority, share: true, own: q.Key, admit: q.Key}
	miss, placed := p.placeGang(pods, placed, &c)
	return miss < 0, placed
}

// candidates are the running jobs q may stop: of a lower priority, holding
// room on a node, not shrunk or stopped already in this plan, and, of
// another team, only as [plan.mayStopAcrossTeams] allows; lowest priority
// first, then newest first. unseen reports a job q may stop whose pods the
// snapshot does not hold yet ([RunningJob.MinPods]): which jobs to stop
// cannot be chosen without its room.
func (p *plan) candidates(q *QueuedJob, need vec, running []RunningJob) (out []*candidate, unseen bool) {
	if p.stopped == nil {
		p.stopped = map[string]bool{}
	}
	seen := map[string]bool{}
	for i := range running {
		r := &running[i]
		if r.Priority >= q.Priority || r.Key == q.Key || seen[r.Key] || p.stopped[r.Key] || !p.mayStopAcrossTeams(q, need, r) {
			continue
		}
		seen[r.Key] = true
		if p.boundPods(r) < r.MinPods {
			unseen = true
		}
		c := &candidate{in: r, job: p.byKey[r.Key]}
		if j := c.job; j != nil {
			if j.shrunk > 0 || j.grown > 0 {
				continue
			}
			for k := j.next; k < len(j.victims); k++ {
				if v := &j.victims[k]; v.bound {
					if n := p.nodeOf(j, v); n >= 0 {
						c.pods = append(c.pods, heldRoom{node: n, req: v.req})
					}
				}
			}
		} else {
			c.pods = p.boundRoom(p.snap.Trainers[r.Key], c.pods)
		}
		c.pods = p.boundRoom(p.snap.Servers[r.Key], c.pods)
		if len(c.pods) > 0 {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *candidate) int {
		return cmp.Or(cmp.Compare(a.in.Priority, b.in.Priority), b.in.Created.Compare(a.in.Created), strings.Compare(a.in.Key, b.in.Key))
	})
	return out, unseen
}

// boundPods counts the pods of a running job that the snapshot holds bound
// to a node, counted or not.
func (p *plan) boundPods(r *RunningJob) int32 {
	trainers := p.snap.Trainers[r.Key]
	if j := p.byKey[r.Key]; j != nil {
		trainers = j.in.Trainers
	}
	var n int32
	for _, pods := range [][]TrainerPod{trainers, p.snap.Servers[r.Key]} {
		for _, t := range pods {
			if t.Node != "" {
				n++
			}
		}
	}
	return n
}

// boundRoom appends the room the bound pods hold on counted nodes.
func (p *plan) boundRoom(pods []TrainerPod, out []heldRoom) []heldRoom {
	for _, t := range pods {
		if n, ok := p.nodeIdx[t.Node]; ok && t.Node != "" {
			out = append(out, heldRoom{node: n, req: vecOf(t.Request)})
		}
	}
	return out
}
