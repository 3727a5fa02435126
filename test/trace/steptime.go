package trace

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Timing is one training step: its time and the part of it spent
// synchronising the gradients, in seconds.
type Timing struct {
	Step, Sync float64
}

// lerp is the timing a fraction f of the way from t to u.
func (t Timing) lerp(u Timing, f float64) Timing {
	return Timing{Step: t.Step + f*(u.Step-t.Step), Sync: t.Sync + f*(u.Sync-t.Sync)}
}

// point is one measured local batch of a size.
type point struct {
	local float64
	t     Timing
}

// curve is the measurements of one size (a placement, or a count of nodes
// and replicas), by local batch, one point per local batch.
type curve []point

// at is the timing of a local batch: linear between the two measured
// local batches around it, the smallest's below them all, and above them
// all the local batch accumulated over the fewest micro-batches the
// largest measured one holds, as Pollux's simulator runs a local batch
// above its max_local_bsz: one synchronisation, and every micro-batch
// after the first costs the step less its synchronisation.
func (c curve) at(local float64) Timing {
	last := c[len(c)-1]
	if local > last.local {
		k := math.Ceil(local/last.local - 1e-9)
		t := c.at(local / k)
		return Timing{Step: t.Step + (k-1)*(t.Step-t.Sync), Sync: t.Sync}
	}
	i, found := slices.BinarySearchFunc(c, local, func(p point, l float64) int { return cmp.Compare(p.local, l) })
	switch {
	case found:
		return c[i].t
	case i == 0:
		return c[0].t
	}
	a, b := c[i-1], c[i]
	return a.t.lerp(b.t, (local-a.local)/(b.local-a.local))
}

// size is a count of nodes and of replicas across them.
type size struct{ nodes, replicas int }

// stepTimes are an application's measured step times: by placement
// (placements.csv), and by size, the placements of a size averaged
// together with the larger sizes of scalability.csv.
type stepTimes struct {
	placements map[string]curve
	sizes      map[size]curve
	// nodes are the node counts measured, ascending; replicas the replica
	// counts measured at each, ascending.
	nodes    []int
	replicas map[int][]int
}

// at is the step's timing of a placement (the replicas on each node it
// uses) at a local batch. A placement measured as such is read from its
// own curve, as Pollux's simulator does; any other from the sizes around
// it ([stepTimes.atSize]).
func (s *stepTimes) at(placement []int, local float64) Timing {
	key, nodes, replicas := canonical(placement)
	if c, ok := s.placements[key]; ok {
		return c.at(local)
	}
	return s.atSize(nodes, replicas, local)
}

// atSize interpolates between sizes, where Pollux's simulator
// triangulates them (scipy's LinearNDInterpolator, which has no match in
// Go): at a node count measured, linear in the replicas between the two
// replica counts measured around them; between two node counts measured,
// linear in the nodes between the two, each read at the same replicas per
// node — a job of 5 nodes and 10 replicas lies between 4 nodes of 8 and 6
// of 12. Beyond the largest node count it is read there at the same
// replicas, as Pollux's simulator caps the nodes at 16.
func (s *stepTimes) atSize(nodes, replicas int, local float64) Timing {
	nodes = min(max(nodes, s.nodes[0]), s.nodes[len(s.nodes)-1])
	i, found := slices.BinarySearch(s.nodes, nodes)
	if found {
		return s.atReplicas(nodes, float64(replicas), local)
	}
	lo, hi := s.nodes[i-1], s.nodes[i]
	perNode := float64(replicas) / float64(nodes)
	a := s.atReplicas(lo, perNode*float64(lo), local)
	b := s.atReplicas(hi, perNode*float64(hi), local)
	return a.lerp(b, float64(nodes-lo)/float64(hi-lo))
}

// atReplicas is the timing of a count of replicas, not necessarily whole,
// at a node count measured: linear between the replica counts measured
// around it, the nearest's outside them.
func (s *stepTimes) atReplicas(nodes int, replicas, local float64) Timing {
	rs := s.replicas[nodes]
	replicas = min(max(replicas, float64(rs[0])), float64(rs[len(rs)-1]))
	i := firstAtLeast(rs, replicas)
	if float64(rs[i]) == replicas || i == 0 {
		return s.sizes[size{nodes, rs[i]}].at(local)
	}
	lo, hi := rs[i-1], rs[i]
	a := s.sizes[size{nodes, lo}].at(local)
	b := s.sizes[size{nodes, hi}].at(local)
	return a.lerp(b, (replicas-float64(lo))/float64(hi-lo))
}

// firstAtLeast is the index of the first of the ascending counts that is at least
// x (x is at most the last).
func firstAtLeast(counts []int, x float64) int {
	i, _ := slices.BinarySearchFunc(counts, x, func(c int, x float64) int { return cmp.Compare(float64(c), x) })
	return i
}

// canonical returns a placement's key as placements.csv writes it — the
// replicas of each node used, as digits, rotated to the smallest such
// string, as Pollux's simulator normalises a placement — with its node and
// replica counts. A node of more than 9 replicas, which no file measures,
// is written in brackets so that the key matches nothing.
func canonical(placement []int) (key string, nodes, replicas int) {
	var used []string
	for _, r := range placement {
		if r <= 0 {
			continue
		}
		nodes, replicas = nodes+1, replicas+r
		if r > 9 {
			used = append(used, "["+strconv.Itoa(r)+"]")
			continue
		}
		used = append(used, strconv.Itoa(r))
	}
	for i := range used {
		rot := strings.Join(append(slices.Clone(used[i:]), used[:i]...), "")
		if i == 0 || rot < key {
			key = rot
		}
	}
	return key, nodes, replicas
}

// parsePlacement reads a placement of placements.csv: a digit from 1 to 9
// per node, its replicas.
func parsePlacement(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("empty placement")
	}
	out := make([]int, 0, len(s))
	for _, c := range s {
		if c < '1' || c > '9' {
			return nil, fmt.Errorf("placement %q: a digit from 1 to 9 per node", s)
		}
		out = append(out, int(c-'0'))
	}
	return out, nil
}
