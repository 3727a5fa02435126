package autoscaler

// Picking running trainers by node. The ReplicaSet controller deletes a
// set's pods that do not run first, and among running pods the lowest
// pod-deletion-cost first; the actuator gives the trainers a plan picks the
// lowest cost (v1.DeletionCostRemove) before it lowers the replicas. So the
// plan can free the node it chose for a pending pod by removing only the
// job's running trainers on that node, not its newest ones wherever they run.

// pickRunning offers, for each node c may use, the job's running trainers
// from victims[from:] on it, newest first, at most room of them per node, as
// slots: the cost of one is cost (what goes before the running trainers)
// plus its rank on the node. It reports whether depth held a trainer back.
func (p *planner) pickRunning(j *jobState, c claim, from, room int, cost, depth int32, add func(int32, slot)) (truncated bool) {
	if p.ranks == nil {
		p.ranks = make([]int32, len(p.nodes))
	}
	prefix := int32(from - j.next) // #nosec G115 -- a count of the job's trainers
	var seen []int32
	for k := from; k < len(j.victims); k++ {
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
		add(n, slot{job: j, pos: int32(k), cost: cost + r + 1, drop: prefix + r + 1}) // #nosec G115 -- an index of the job's victims
	}
	for _, n := range seen {
		p.ranks[n] = 0
	}
	return truncated
}

// cut removes what an eviction chose of j on node: its trainers up to
// victims[cut] in deletion order, except that of the running ones only those
// on node go.
func (p *planner) cut(j *jobState, cut, node int) {
	for j.next <= cut && j.next < j.runFrom {
		p.removeNext(j)
	}
	for k := j.next; k <= cut; k++ {
		if int(p.nodeOf(j, &j.victims[k])) == node {
			p.removeAt(j, k)
		}
	}
}

// removeAt removes the running trainer victims[k]. One that is not the next
// in deletion order is moved there and picked: the actuator marks it, so the
// ReplicaSet controller deletes it before the others. The rest keep their
// order, and positions after k do not move.
func (p *planner) removeAt(j *jobState, k int) {
	if k > j.next {
		v := j.victims[k]
		copy(j.victims[j.next+1:k+1], j.victims[j.next:k])
		j.victims[j.next] = v
		j.picked = append(j.picked, j.in.Trainers[v.pod].Name)
	}
	p.removeNext(j)
}
