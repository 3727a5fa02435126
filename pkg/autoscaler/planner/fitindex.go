package planner

import "math"

// fitIndex answers "which is the first node, in name order, with room for r?"
// in O(log n) for typical clusters instead of scanning every node per trainer.
// It is a segment tree over the nodes whose inner entries hold the
// per-dimension maximum free capacity of their subtree; a subtree is searched
// only when each of its maxima covers the request. The maxima can come from
// different nodes, so the search may backtrack, but an update is always
// O(log n).
type fitIndex struct {
	size int   // leaves; a power of two
	tree []vec // tree[1] is the root, leaf i is tree[size+i]
}

// absent fills the padding leaves so that nothing ever fits there.
var absent = vec{math.MinInt64, math.MinInt64, math.MinInt64}

func newFitIndex(free []vec) *fitIndex {
	size := 1
	for size < len(free) {
		size *= 2
	}
	t := &fitIndex{size: size, tree: make([]vec, 2*size)}
	for i := range size {
		if i < len(free) {
			t.tree[size+i] = free[i]
		} else {
			t.tree[size+i] = absent
		}
	}
	for i := size - 1; i >= 1; i-- {
		t.pull(i)
	}
	return t
}

func (t *fitIndex) pull(i int) {
	l, r := t.tree[2*i], t.tree[2*i+1]
	t.tree[i] = vec{max(l[0], r[0]), max(l[1], r[1]), max(l[2], r[2])}
}

// set records node i's new free capacity.
func (t *fitIndex) set(i int, free vec) {
	i += t.size
	t.tree[i] = free
	for i /= 2; i >= 1; i /= 2 {
		t.pull(i)
	}
}

// firstFit returns the lowest-numbered node whose free capacity covers r, or
// -1.
func (t *fitIndex) firstFit(r vec) int {
	if !r.fitsIn(t.tree[1]) {
		return -1
	}
	return t.descend(1, r)
}

func (t *fitIndex) descend(i int, r vec) int {
	if i >= t.size {
		return i - t.size
	}
	for _, c := range [2]int{2 * i, 2*i + 1} {
		if r.fitsIn(t.tree[c]) {
			if n := t.descend(c, r); n >= 0 {
				return n
			}
		}
	}
	return -1
}
