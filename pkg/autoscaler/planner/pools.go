package planner

import "math"

// pool is a group of nodes that MaxLoadDesired applies to as one: the node
// classes the jobs' placements join. Two classes are in one pool when some
// job's trainers may use both, so every job's trainers may use nodes of one
// pool only, and a cluster whose jobs may all run anywhere is one pool, as
// the original EDL's whole-cluster load was. Nodes no job may use make pools
// of their own, which no job reads.
//
// So a full GPU pool does not hold back the jobs of the CPU nodes, and the
// idle CPUs of GPU nodes do not let the CPU jobs fill their nodes past the
// threshold: each job keeps the headroom the flag promises on the nodes it
// runs on.
type pool struct {
	nodes     int
	total     vec
	requested vec // the load the shrinking phases test: pods bound to its nodes that stay
	growLoad  vec // the load growth tests: bound pods that stay or that this plan removes, and what it expects to be bound
	// idle is the capacity growth could use on its nodes, and idleNodes how
	// many of them have idle CPU, for the reasons.
	idle      vec
	idleNodes int
	idleText  string
	// kept is the part of growLoad growth kept for jobs arriving.
	kept vec
}

// buildPools groups the classes into pools and counts each pool's capacity
// and load. It runs before any room is counted as going.
//
// A single pool takes the snapshot's totals (exact to the byte before they
// are rounded to MiB); several pools sum their nodes. A job with no
// eligible node, whose trainers cannot run anywhere, tests the whole
// cluster's load: p.all, kept beside the pools whenever there are several.
func (p *plan) buildPools() {
	snap := p.snap
	c := p.classes
	parent := make([]int32, len(c.members))
	for i := range parent {
		parent[i] = int32(i) // #nosec G115 -- a class index
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, j := range p.jobs {
		root := int32(-1)
		j.elig.eachClass(c, func(id int32) {
			switch r := find(id); {
			case root < 0:
				root = r
			case r != root:
				parent[r] = root
			}
		})
	}
	p.poolOf = make([]int32, len(c.members))
	index := map[int32]int32{}
	for id := range c.members {
		r := find(int32(id)) // #nosec G115 -- a class index
		k, ok := index[r]
		if !ok {
			k = int32(len(index)) // #nosec G115 -- at most one pool per class
			index[r] = k
		}
		p.poolOf[id] = k
	}
	whole := pool{
		nodes:     len(p.nodes),
		total:     vec{snap.CPUTotalMilli, snap.MemoryTotalMega, snap.GPUTotal},
		requested: vec{snap.CPURequestMilli, snap.MemoryRequestMega, snap.GPURequest},
	}
	if len(index) <= 1 {
		p.pools = []pool{whole}
		p.all = &p.pools[0]
	} else {
		p.pools = make([]pool, len(index)+1)
		for n := range p.nodes {
			pl := p.poolAt(n)
			alloc := vecOf(p.nodes[n].Allocatable)
			pl.nodes++
			pl.total = pl.total.plus(alloc)
			pl.requested = pl.requested.plus(alloc.minus(vecOf(p.nodes[n].Free)))
		}
		p.all = &p.pools[len(index)]
		*p.all = whole
	}
	for _, j := range p.jobs {
		j.pool = p.poolOfSet(j.elig)
	}
}

// poolOfSet is the pool of the nodes of e: the whole cluster's when e has
// none or, for a placement the pools were not drawn from, spans several.
func (p *plan) poolOfSet(e *eligible) *pool {
	k := int32(-1)
	e.eachClass(p.classes, func(id int32) {
		switch {
		case k == -1:
			k = p.poolOf[id]
		case k != p.poolOf[id]:
			k = -2
		}
	})
	if k < 0 {
		return p.all
	}
	return &p.pools[k]
}

// eachClass calls f with each class e has nodes of (more than once for a
// per-node set).
func (e *eligible) eachClass(c *classes, f func(int32)) {
	if e.perNode {
		for _, n := range e.nodes {
			f(c.classOf[n])
		}
		return
	}
	for _, id := range e.classes {
		f(id)
	}
}

// poolAt is the pool of node n.
func (p *plan) poolAt(n int) *pool { return &p.pools[p.poolOf[p.classes.classOf[n]]] }

// expect counts r, placed on node n by the plan, in growth's load of its
// pool and of the whole cluster.
func (p *plan) expect(n int, r vec) {
	pl := p.poolAt(n)
	pl.growLoad = pl.growLoad.plus(r)
	if pl != p.all {
		p.all.growLoad = p.all.growLoad.plus(r)
	}
}

// bindsSoon counts r, a pending pod the plan gave room on node n (one
// kube-scheduler nominated n for, one that fits, one a yield made room
// for), in the load the shrinking phases test: it binds within seconds, and
// the load phase keeps max_load_desired's headroom in this plan rather than
// trimming for it a plan or two later, once it is bound. Growth's load
// counts it already, or still counts the trainers removed for it. The kept
// trainers not scheduled yet are not counted: growth placed them within the
// threshold, and trimming them when pods of a higher priority arrived
// between two plans would hold their jobs in the cool-down while the others
// grow.
func (p *plan) bindsSoon(n int, r vec) {
	p.relieve(n, vec{}.minus(r)) // relieve's opposite
}

// relieve takes r, which pods on node n hold and which is going, from the
// load the shrinking phases test, of its pool and of the whole cluster.
func (p *plan) relieve(n int, r vec) {
	pl := p.poolAt(n)
	pl.requested = pl.requested.minus(r)
	if pl != p.all {
		p.all.requested = p.all.requested.minus(r)
	}
}

// over returns a bit per resource whose load exceeds the threshold in pool
// pl. Growth uses the same comparison, so the two can never disagree (the
// original EDL checked GPUs against the total to grow and against
// max_load_desired of it to shrink, and added and removed a GPU trainer
// forever).
func (p *plan) over(pl *pool, load vec) (mask int) {
	for r := range numRes {
		if p.exceeds(pl, load[r], r) {
			mask |= 1 << r
		}
	}
	return mask
}

func (p *plan) exceeds(pl *pool, load int64, r int) bool {
	return float64(load) > p.threshold*float64(pl.total[r])
}

// load is pool pl's load of resource r, for the reasons.
func (pl *pool) load(r int) float64 {
	if pl.total[r] == 0 {
		return math.Inf(1)
	}
	return float64(pl.requested[r]) / float64(pl.total[r])
}

// loadAdmits reports whether one more trainer of j keeps every resource it
// asks for within the threshold in its pool. Resources it does not ask for
// are not its business: a CPU-only trainer is not held back by GPU load.
func (p *plan) loadAdmits(j *jobState) bool {
	load, req := j.pool.growLoad.plus(j.req), j.req
	for r := range numRes {
		if req[r] > 0 && float64(load[r]) > p.growThreshold()*float64(j.pool.total[r]) {
			return false
		}
	}
	return true
}

// admits reports whether load keeps every resource req asks for within the
// threshold in pool pl.
func (p *plan) admits(pl *pool, load, req vec) bool {
	for r := range numRes {
		if req[r] > 0 && p.exceeds(pl, load[r], r) {
			return false
		}
	}
	return true
}

// onPool is what a load figure of a pool, rather than of the whole cluster,
// says it is.
func onPool(pooled bool) string {
	if pooled {
		return " on its pool"
	}
	return ""
}

// loadSnapshot copies what save keeps of the pools: their requested load.
func (p *plan) loadSnapshot() []vec {
	out := make([]vec, len(p.pools))
	for i := range p.pools {
		out[i] = p.pools[i].requested
	}
	return out
}

func (p *plan) restoreLoad(s []vec) {
	for i := range p.pools {
		p.pools[i].requested = s[i]
	}
}
