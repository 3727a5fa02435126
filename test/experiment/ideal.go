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
	total = r.onNode(node) * int64(n)
	var shapes []PodDemand
	for _, d := range demand {
		if d.Max > 0 && (d.CPUMilli > 0 || d.GPU > 0) {
			d.Min = min(d.Min, d.Max)
			shapes = append(shapes, d)
		}
	}
	if n == 0 || len(shapes) == 0 {
		return 0, total, nil
	}
	patterns := nodePatterns(node, shapes)
	if len(patterns) == 0 {
		return 0, total, nil
	}
	placed, err = solvePacking(r, n, shapes, patterns, true)
	if err != nil {
		placed, err = solvePacking(r, n, shapes, patterns, false)
	}
	if err != nil {
		return 0, total, fmt.Errorf("packing bound: %w", err)
	}
	return min(placed, total), total, nil
}

// solvePacking maximizes the amount of r placed over the patterns, in the standard
// form lp.Simplex takes: minimize c·x subject to A x = b, x ≥ 0, with one
// slack column per ≤ row and one surplus column per ≥ row.
func solvePacking(r Resource, n int, shapes []PodDemand, patterns [][]int, withMin bool) (int64, error) {
	type row struct {
		coef  func(pattern []int) float64
		bound float64
		ge    bool
	}
	rows := []row{{coef: func([]int) float64 { return 1 }, bound: float64(n)}}
	for i, s := range shapes {
		rows = append(rows, row{coef: func(p []int) float64 { return float64(p[i]) }, bound: float64(s.Max)})
		if withMin && s.Min > 0 {
			rows = append(rows, row{coef: func(p []int) float64 { return float64(p[i]) }, bound: float64(s.Min), ge: true})
		}
	}
	cols := len(patterns) + len(rows)
	a := mat.NewDense(len(rows), cols, nil)
	b := make([]float64, len(rows))
	c := make([]float64, cols)
	for j, p := range patterns {
		var value int64
		for i, k := range p {
			value += int64(k) * r.of(shapes[i])
		}
		c[j] = -float64(value)
	}
	for r, rw := range rows {
		for j, p := range patterns {
			a.Set(r, j, rw.coef(p))
		}
		if rw.ge {
			a.Set(r, len(patterns)+r, -1)
		} else {
			a.Set(r, len(patterns)+r, 1)
		}
		b[r] = rw.bound
	}
	opt, _, err := lp.Simplex(c, a, b, 1e-9, nil)
	if err != nil {
		return 0, err
	}
	return int64(-opt + 0.5), nil
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
			if c > node.CPUMilli || m > node.MemMiB || g > node.GPU || (node.Pods > 0 && p > node.Pods) {
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
