package experiment

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// PodDemand is a number of pods of one shape that want to run: at least Min
// of them must be placed (pods of a higher priority, a job's minimum), at
// most Max may be.
type PodDemand struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	GPU      int64
	Min, Max int
}

// NodeShape is the allocatable of one node.
type NodeShape struct {
	CPUMilli int64
	MemMiB   int64
	GPU      int64
	Pods     int
}

// Resource is what a packing bound counts.
type Resource string

// The resources a bound is taken over.
const (
	CPU Resource = "cpu"
	GPU Resource = "gpu"
)

// of is the amount of r one pod of d requests (millicores for CPU).
func (r Resource) of(d PodDemand) int64 {
	if r == GPU {
		return d.GPU
	}
	return d.CPUMilli
}

// onNode is the amount of r one node offers.
func (r Resource) onNode(n NodeShape) int64 {
	if r == GPU {
		return n.GPU
	}
	return n.CPUMilli
}

// Ideal returns the most CPU (in millicores) that any placement of the
// demanded pods onto n nodes of the given shape can request, and the total
// allocatable CPU; their ratio is the ideal utilization.
//
// It solves the linear relaxation of the packing problem: every way of
// filling one node with the demanded shapes (a pattern that fits the node's
// CPU, memory and pod count) is a variable counting the nodes packed that
// way; at most n nodes, between Min and Max pods of each shape; maximize the
// CPU placed. A real placement is one integral solution of the same
// constraints, so the relaxation bounds every scheduler from above, and with
// a hundred nodes it is within a node or so of the best integral packing.
// With enough demand it is the capacity minus the slivers the pod sizes
// cannot fill (an 18-CPU node holds three 5-CPU trainers and 3 CPUs no
// trainer can use); with little demand it is the demand. When the minimums
// cannot all be placed they are dropped and the bound is taken over the
// maxima alone.
func Ideal(node NodeShape, n int, demand []PodDemand) (placedMilli, totalMilli int64, err error) {
	return IdealOf(CPU, node, n, demand)
}

// IdealOf is Ideal for the resource r: the most of r any placement of the
// demand onto n nodes can request, and the total. With GPU it is the bound
// of a GPU pool, whose pods without GPUs still take room on its nodes.
func IdealOf(r Resource, node NodeShape, n int, demand []PodDemand) (placed, total int64, err error) {
	return IdealAround(r, node, n, PodDemand{}, nil, demand)
}

// IdealAround is IdealOf with some pods held where they run: held[k] nodes
// carry k pods of shape fixed each (the web pods kube-scheduler has bound),
// which count as placed, and the demand is packed into the room the nodes
// have left around them. Pods of the fixed shape not yet bound belong in
// the demand. It is the bound of what the other pods' placement can reach
// once the fixed ones are where they are.
func IdealAround(r Resource, node NodeShape, n int, fixed PodDemand, held []int, demand []PodDemand) (placed, total int64, err error) {
	var rooms []Room
	var heldAmount int64
	free := n
	for k, count := range held {
		if k == 0 || count == 0 {
			continue
		}
		count = min(count, free)
		free -= count
		heldAmount += int64(count) * int64(k) * r.of(fixed)
		rooms = append(rooms, Room{Free: node.less(fixed, k), Nodes: count})
	}
	if free > 0 {
		rooms = append(rooms, Room{Free: node, Nodes: free})
	}
	return IdealIn(r, rooms, heldAmount, r.onNode(node)*int64(n), demand)
}

// Room is Nodes nodes with the same room Free left by the pods held on
// them.
type Room struct {
	Free  NodeShape
	Nodes int
}

// IdealIn packs the demand into the rooms: the most of r placed, with held
// (the amount of r of the pods that made the rooms) counted as placed, out
// of total.
func IdealIn(r Resource, rooms []Room, held, total int64, demand []PodDemand) (placed, _ int64, err error) {
	var shapes []PodDemand
	for _, d := range demand {
		if d.Max > 0 && (d.CPUMilli > 0 || d.GPU > 0) {
			d.Min = min(d.Min, d.Max)
			shapes = append(shapes, d)
		}
	}
	if len(shapes) == 0 {
		return min(held, total), total, nil
	}
	classes := make([]nodeClass, 0, len(rooms))
	for _, room := range rooms {
		if room.Nodes > 0 {
			classes = append(classes, nodeClass{n: room.Nodes, patterns: nodePatterns(room.Free, shapes)})
		}
	}
	placed, err = solvePacking(r, classes, shapes, true)
	if err != nil {
		placed, err = solvePacking(r, classes, shapes, false)
	}
	if err != nil {
		return 0, total, fmt.Errorf("packing bound: %w", err)
	}
	return min(held+placed, total), total, nil
}

// less is the room a node has left once k pods of d run on it.
func (n NodeShape) less(d PodDemand, k int) NodeShape {
	n.CPUMilli -= int64(k) * d.CPUMilli
	n.MemMiB -= int64(k) * d.MemMiB
	n.GPU -= int64(k) * d.GPU
	n.Pods = podsLeft(n.Pods, k)
	return n
}

// podsLeft is a node's pod count left once k more pods run on it: 0 (no
// limit) stays 0, and a full node has -1, which no pattern fits.
func podsLeft(pods, k int) int {
	if pods == 0 {
		return 0
	}
	if pods <= k {
		return -1
	}
	return pods - k
}

// nodeClass is n nodes with the same room, and the ways of filling one.
type nodeClass struct {
	n        int
	patterns [][]int
}

// solvePacking maximizes the amount of r placed over the classes' patterns,
// in the standard form lp.Simplex takes: minimize c·x subject to A x = b,
// x ≥ 0, with one slack column per ≤ row and one surplus column per ≥ row.
func solvePacking(r Resource, classes []nodeClass, shapes []PodDemand, withMin bool) (int64, error) {
	type column struct {
		class   int
		pattern []int
	}
	var columns []column
	for c, class := range classes {
		for _, p := range class.patterns {
			columns = append(columns, column{c, p})
		}
	}
	if len(columns) == 0 {
		return 0, nil
	}
	type row struct {
		coef  func(column) float64
		bound float64
		ge    bool
	}
	var rows []row
	for c, class := range classes {
		rows = append(rows, row{coef: func(col column) float64 { return b2f(col.class == c) }, bound: float64(class.n)})
	}
	for i, s := range shapes {
		rows = append(rows, row{coef: func(col column) float64 { return float64(col.pattern[i]) }, bound: float64(s.Max)})
		if withMin && s.Min > 0 {
			rows = append(rows, row{coef: func(col column) float64 { return float64(col.pattern[i]) }, bound: float64(s.Min), ge: true})
		}
	}
	cols := len(columns) + len(rows)
	a := mat.NewDense(len(rows), cols, nil)
	b := make([]float64, len(rows))
	c := make([]float64, cols)
	for j, col := range columns {
		var value int64
		for i, k := range col.pattern {
			value += int64(k) * r.of(shapes[i])
		}
		c[j] = -float64(value)
	}
	for i, rw := range rows {
		for j, col := range columns {
			a.Set(i, j, rw.coef(col))
		}
		if rw.ge {
			a.Set(i, len(columns)+i, -1)
		} else {
			a.Set(i, len(columns)+i, 1)
		}
		// A tiny perturbation of each bound, different per row, keeps the
		// simplex off degenerate vertices, where gonum's Bland rule can step
		// in place for ever (two kinds of room and web pods both held and
		// pending did); it moves the optimum by far less than a millicore.
		b[i] = rw.bound + 1e-7*float64(i+1)
		if rw.ge {
			b[i] = rw.bound - 1e-7*float64(i+1)
		}
	}
	opt, _, err := simplex(c, a, b, 1e-9, nil)
	if err != nil {
		return 0, err
	}
	return int64(-opt + 0.5), nil
}

// simplex solves the packing program: gonum's lp.Simplex, which a test
// replaces with one that fails.
var simplex = lp.Simplex

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// nodePatterns lists every non-empty combination of the shapes (k[i] pods of
// shape i, at most its Max) that fits on one node.
func nodePatterns(node NodeShape, shapes []PodDemand) [][]int {
	var out [][]int
	cur := make([]int, len(shapes))
	var walk func(i int, cpu, mem, gpu int64, pods int)
	walk = func(i int, cpu, mem, gpu int64, pods int) {
		if i == len(shapes) {
			if pods > 0 {
				out = append(out, append([]int(nil), cur...))
			}
			return
		}
		s := shapes[i]
		for k := 0; k <= s.Max; k++ {
			c, m, g, p := cpu+int64(k)*s.CPUMilli, mem+int64(k)*s.MemMiB, gpu+int64(k)*s.GPU, pods+k
			if c > node.CPUMilli || m > node.MemMiB || g > node.GPU || (node.Pods != 0 && p > node.Pods) {
				break
			}
			cur[i] = k
			walk(i+1, c, m, g, p)
		}
		cur[i] = 0
	}
	walk(0, 0, 0, 0, 0)
	return out
}
