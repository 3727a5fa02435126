package planner

// Picking running trainers by node. The ReplicaSet controller deletes a
// set's pods that do not run first, and among running pods the lowest
// pod-deletion-cost first; the actuator gives the trainers a plan picks the
// lowest cost (v1.DeletionCostRemove) before it lowers the replicas. So the
// plan can free the node it chose for a pending pod by removing only the
// job's running trainers on that node, not its newest ones wherever they run,
// and the controller deletes exactly those.

// pickWindow bounds the running trainers of one job pickRunning looks at,
// per running trainer a cut may take (the search's depth): the newest
// pickWindow × depth. A search that finds nothing looks again deeper, so
// every trainer is reached, but a pod that one of the newest trainers' nodes
// can take is placed after a look at a few trainers per job, not at all of
// them. BenchmarkPlan at 5,000 nodes took 150 ms of CPU a plan looking at
// every running trainer, 34 ms at 4 per depth and 31 ms at 2 (29 ms without
// picks); BenchmarkDecide at 1,000 nodes 90 ms at 4 and 54 ms at 2 (49 ms).
const pickWindow = 2

// pickRunning offers, for each node c may use, the job's running trainers
// among the newest pickWindow × depth from victims[from:] on it, newest
// first, at most room of them per node, as slots: the cost of one is cost
// (what goes before the running trainers) plus its rank on the node. It
// returns touched with the nodes it added candidates to, and whether depth
// held a trainer back.
func (p *plan) pickRunning(j *jobState, c claim, from, room int, cost, depth int32, touched []int32) ([]int32, bool) {
	if p.ranks == nil {
		p.ranks = make([]int32, len(p.nodes))
	}
	prefix := int32(from - j.next) // #nosec G115 -- a count of the job's trainers
	seen := p.ranked[:0]
	end := len(j.victims)
	truncated := end-from > pickWindow*int(depth)
	if truncated {
		end = from + pickWindow*int(depth)
	}
	for k := from; k < end; k++ {
		n := p.nodeOf(j, &j.victims[k])
		if n < 0 || !c.elig.has(n, p.classes.classOf[n]) {
			continue
		}
		r := p.ranks[n]
		if int(r) == room {
			continue
		}
		if cost+r+1 > depth {
			truncated = true
			continue
		}
		if r == 0 {
			seen = append(seen, n)
		}
		p.ranks[n] = r + 1
		touched = p.addCand(touched, n, slot{job: j, pos: int32(k), cost: cost + r + 1, drop: prefix + r + 1}) // #nosec G115 -- an index of the job's victims
	}
	for _, n := range seen {
		p.ranks[n] = 0
	}
	p.ranked = seen
	return touched, truncated
}

// cut removes what an eviction chose of j on node: its trainers up to
// victims[cut] in deletion order, except that of the running ones only those
// on node go.
func (p *plan) cut(j *jobState, cut, node int) {
	for j.next <= cut && j.next < j.runFrom {
		p.removeNext(j)
	}
	for k := j.next; k <= cut; k++ {
		if int(p.nodeOf(j, &j.victims[k])) == node {
			p.removeAt(j, k)
		}
	}
}

// removeAt removes the running trainer victims[k] and picks it: the
// actuator marks it, so the ReplicaSet controller deletes it before the
// others. Even the next in the model's order is picked: with
// LogarithmicScaleDown the controller treats trainers started close together
// as equals and chooses among them by UID, not by age. One that is not the
// next is moved there; the rest keep their order, and positions after k do
// not move.
func (p *plan) removeAt(j *jobState, k int) {
	v := j.victims[k]
	if k > j.next {
		copy(j.victims[j.next+1:k+1], j.victims[j.next:k])
		j.victims[j.next] = v
		p.moves = append(p.moves, move{job: j, from: k, to: j.next})
	}
	j.picked = append(j.picked, j.in.Trainers[v.pod].Name)
	p.removeNext(j)
}

// move is one reordering of a job's victims by removeAt, kept so that a
// trial ([plan.admit]) can be rolled back.
type move struct {
	job      *jobState
	from, to int
}

// undoMoves puts the victims back in the order they had before the last
// len(p.moves)-n moves.
func (p *plan) undoMoves(n int) {
	for i := len(p.moves) - 1; i >= n; i-- {
		m := p.moves[i]
		vs := m.job.victims
		v := vs[m.to]
		copy(vs[m.to:m.from], vs[m.to+1:m.from+1])
		vs[m.from] = v
	}
	p.moves = p.moves[:n]
}

// removed names the existing trainers the plan removes from j, in the
// ReplicaSet controller's order (victims[gone:next]): what Remove lists for
// a job that names its removals.
func (j *jobState) removed() []string {
	var names []string
	for _, v := range j.victims[j.gone:j.next] {
		if v.created {
			names = append(names, j.in.Trainers[v.pod].Name)
		}
	}
	return names
}

// deletionGroup is the ReplicaSet controller's first criterion for which pod
// to delete: unscheduled (0) before scheduled but not running (1) before
// running (2).
func deletionGroup(t *TrainerPod) int {
	switch {
	case t.Node == "":
		return 0
	case !t.Running():
		return 1
	}
	return 2
}
