package planner

import "math"

// largestNode returns the node j's trainers may use with the most
// allocatable for them, and whether there is any.
func (p *plan) largestNode(j *jobState) (string, vec, bool) {
	r := p.largestRoom(j, nil)
	return r.node, r.room, r.node != ""
}

// roomKey and nodeRoom cache largestRoom per placement, trainer shape and
// fitter.
type roomKey struct {
	elig *eligible
	req  vec
	f    *fitter
}

type nodeRoom struct {
	node string
	room vec
}

// largestRoom returns the free room in f (the allocatable when f is nil),
// on a node j may use, that covers the largest part of one trainer. Jobs of
// one placement and trainer shape share the answer: a cluster of thousands
// of nodes is scanned once per shape, not once per job.
func (p *plan) largestRoom(j *jobState, f *fitter) nodeRoom {
	k := roomKey{j.elig, j.req, f}
	if r, ok := p.rooms[k]; ok {
		return r
	}
	room := func(n int32) vec { return vecOf(p.nodes[n].Allocatable) }
	if f != nil {
		room = func(n int32) vec { return f.free[n] }
	}
	best, bestScore := int32(-1), math.Inf(-1)
	p.eachEligible(j.elig, func(n int32) {
		if s := coverage(room(n), j.req); s > bestScore {
			best, bestScore = n, s
		}
	})
	var r nodeRoom
	if best >= 0 {
		r = nodeRoom{p.nodes[best].Name, room(best)}
		for k := range numRes {
			r.room[k] = max(0, r.room[k])
		}
	}
	if p.rooms == nil {
		p.rooms = map[roomKey]nodeRoom{}
	}
	p.rooms[k] = r
	return r
}

// coverage is the share of req that room covers in its scarcest resource.
func coverage(room, req vec) float64 {
	c := math.Inf(1)
	for r := range numRes {
		if req[r] > 0 {
			c = min(c, float64(room[r])/float64(req[r]))
		}
	}
	return c
}

// eachEligible calls fn for every node e allows, in index order within
// each class.
func (p *plan) eachEligible(e *eligible, fn func(n int32)) {
	if e.perNode {
		for _, n := range e.nodes {
			fn(n)
		}
		return
	}
	for _, id := range e.classes {
		for _, n := range p.classes.members[id] {
			fn(n)
		}
	}
}
