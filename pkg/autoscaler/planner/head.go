package planner

import (
	"fmt"
	"slices"
)

// reservation is the room kept for the head of the queue, the first queued
// job that waits for room on nodes: every node some pod of its minimum may
// use and could hold. The jobs behind it are admitted only onto other
// nodes, so they never take room the head could use, and it starts as soon
// as the free room and the trainers above the minimums of jobs of its
// priority or lower hold it. Growth is not held back: what it adds is above
// a minimum, and admission takes it back for the head.
type reservation struct {
	job   string
	nodes []bool // by node index
	// restricted caches each placement's eligible nodes less the reserved
	// ones.
	restricted map[*eligible]*eligible
}

// reserveFor reserves the nodes the pods of job's minimum could use.
func (p *plan) reserveFor(job string, pods []gangPod) *reservation {
	r := &reservation{job: job, nodes: make([]bool, len(p.nodes)), restricted: map[*eligible]*eligible{}}
	for _, g := range pods {
		p.eachEligible(g.elig, func(n int32) {
			if g.req.fitsIn(vecOf(p.nodes[n].Allocatable)) {
				r.nodes[n] = true
			}
		})
	}
	return r
}

// restrict returns the pods with the reserved nodes taken out of the nodes
// each may use; with no reservation, the pods as they are.
func (r *reservation) restrict(p *plan, pods []gangPod) []gangPod {
	if r == nil {
		return pods
	}
	out := slices.Clone(pods)
	for k := range out {
		e := out[k].elig
		re, ok := r.restricted[e]
		if !ok {
			re = &eligible{perNode: true, nodes: []int32{}}
			p.eachEligible(e, func(n int32) {
				if !r.nodes[n] {
					re.nodes = append(re.nodes, n)
				}
			})
			slices.Sort(re.nodes)
			r.restricted[e] = re
		}
		out[k].elig = re
	}
	return out
}

// fitsUnreserved reports whether the pods would fit in the free room if no
// node were reserved, changing nothing.
func (p *plan) fitsUnreserved(pods []gangPod) bool {
	miss, placed := p.placeGang(pods, nil, nil)
	p.unplace(pods, placed)
	return miss < 0
}

// placeableEmpty reports whether the pods would fit at once on the nodes
// they may use if every node were empty: a job whose minimum would not can
// never start on this cluster, and holds no reservation.
func (p *plan) placeableEmpty(pods []gangPod) bool {
	if p.emptyFit == nil {
		alloc := make([]vec, len(p.nodes))
		for n := range p.nodes {
			alloc[n] = vecOf(p.nodes[n].Allocatable)
		}
		p.emptyFit = newFitter(p.classes, alloc)
	}
	f := p.emptyFit
	placed := make([]int, 0, len(pods))
	ok := true
	for _, g := range pods {
		n := f.firstFit(g.req, g.elig)
		if n < 0 {
			ok = false
			break
		}
		f.take(n, g.req)
		placed = append(placed, n)
	}
	for k, n := range placed {
		f.set(n, f.free[n].plus(pods[k].req))
	}
	return ok
}

// unplaceable says why pods that placeableEmpty refused can never start.
func (p *plan) unplaceable(pods []gangPod) string {
	for _, g := range pods {
		if !p.couldHold(g.req, g.elig) {
			return p.noRoom(g)
		}
	}
	var all vec
	count := 0
	seen := make([]bool, len(p.nodes))
	for _, g := range pods {
		p.eachEligible(g.elig, func(n int32) {
			if !seen[n] {
				seen[n] = true
				count++
				all = all.plus(vecOf(p.nodes[n].Allocatable))
			}
		})
	}
	return fmt.Sprintf("the %s its pods may use could not hold them all even empty (%s allocatable in all)",
		plural(count, "node"), all.resources())
}
