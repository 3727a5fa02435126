package experiment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdeal(t *testing.T) {
	node := NodeShape{CPUMilli: 18000, MemMiB: 100 << 10, Pods: 110}
	trainer := func(lo, hi int) PodDemand {
		return PodDemand{Name: "trainer", CPUMilli: 5000, MemMiB: 8 << 10, Min: lo, Max: hi}
	}
	pserver := func(n int) PodDemand { return PodDemand{Name: "pserver", CPUMilli: 4000, MemMiB: 5 << 10, Max: n} }
	web := func(n int) PodDemand { return PodDemand{Name: "web", CPUMilli: 3000, MemMiB: 2 << 10, Min: n, Max: n} }
	tests := []struct {
		name   string
		nodes  int
		demand []PodDemand
		want   int64
	}{
		{name: "no demand", nodes: 3, want: 0},
		{name: "demand below capacity is placed whole", nodes: 3, demand: []PodDemand{trainer(0, 4), pserver(2)}, want: 28000},
		// 20 jobs of 60 trainers and 2 pservers on the original's cluster:
		// 20 nodes of 2 trainers + 2 pservers (18 CPU), 113 of 3 trainers (15).
		{name: "training, full size", nodes: 133, demand: []PodDemand{trainer(0, 1200), pserver(40)}, want: 20*18000 + 113*15000},
		{name: "trainers alone leave 3 CPU per node", nodes: 10, demand: []PodDemand{trainer(0, 100)}, want: 150000},
		// Three trainers and one web pod fill a node exactly.
		{name: "web pods fill the slivers", nodes: 10, demand: []PodDemand{trainer(0, 100), web(10)}, want: 180000},
		// A node holds at most 6 web pods; 60 must run, so 10 nodes are
		// all web pods and nothing else fits.
		{name: "minimums come first", nodes: 10, demand: []PodDemand{trainer(0, 100), web(60)}, want: 180000},
		{name: "memory binds", nodes: 1, demand: []PodDemand{{Name: "fat", CPUMilli: 1000, MemMiB: 60 << 10, Max: 5}}, want: 1000},
		{name: "pods per node bind", nodes: 1, demand: []PodDemand{{Name: "tiny", CPUMilli: 100, MemMiB: 1, Max: 500}}, want: 11000},
		// 100 web pods cannot all run on 10 nodes; the bound drops the
		// minimums rather than fail.
		{name: "unplaceable minimums are dropped", nodes: 10, demand: []PodDemand{web(100)}, want: 180000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed, total, err := Ideal(node, tt.nodes, tt.demand)
			require.NoError(t, err)
			assert.Equal(t, int64(tt.nodes)*18000, total)
			assert.Equal(t, tt.want, placed)
		})
	}
}

func TestIdealAround(t *testing.T) {
	node := NodeShape{CPUMilli: 18000, MemMiB: 100 << 10, Pods: 110}
	trainer := PodDemand{Name: "trainer", CPUMilli: 5000, MemMiB: 8 << 10, Max: 100}
	pserver := PodDemand{Name: "pserver", CPUMilli: 4000, MemMiB: 5 << 10, Min: 2, Max: 2}
	web := PodDemand{Name: "web", CPUMilli: 3000, MemMiB: 2 << 10}
	unboundWeb := func(n int) PodDemand { w := web; w.Min, w.Max = n, n; return w }
	pserver4 := pserver
	pserver4.Min, pserver4.Max = 4, 4
	tests := []struct {
		name   string
		nodes  int
		held   []int
		demand []PodDemand
		want   int64
	}{
		// Free to go anywhere, 30 web pods and the trainers use every CPU
		// (six web pods to a node, or three trainers and one).
		{name: "nothing held is Ideal", nodes: 10, demand: []PodDemand{trainer, pserver, unboundWeb(30)}, want: 180000},
		// The same 30 spread three to a node leave 9 CPU on each: one
		// trainer and one pserver on two nodes, one trainer on the others.
		{name: "web pods spread three to a node", nodes: 10, held: []int{0, 0, 0, 10}, demand: []PodDemand{trainer, pserver},
			want: 90000 + 2*9000 + 8*5000},
		{name: "held web pods count with nothing else", nodes: 10, held: []int{0, 0, 0, 10}, want: 90000},
		// Six to a node on five nodes: the other five are free for three
		// trainers each, and the pservers take a trainer's place on one.
		{name: "web pods packed", nodes: 10, held: []int{5, 0, 0, 0, 0, 0, 5}, demand: []PodDemand{trainer, pserver},
			want: 90000 + 4*15000 + 18000},
		// Pods not yet bound are demand: one goes beside three trainers on
		// the node without a web pod, and both nodes are full.
		{name: "unbound web pods are placed", nodes: 2, held: []int{1, 1}, demand: []PodDemand{trainer, unboundWeb(1)},
			want: 36000},
		// Two must run on two nodes that hold one each: 2 trainers and a
		// web pod on each (13 CPU) beat 3 trainers where no web pod fits.
		{name: "unbound web pods come first", nodes: 2, held: []int{0, 2}, demand: []PodDemand{trainer, unboundWeb(2)},
			want: 2 * (3000 + 13000)},
		{name: "more nodes held than there are", nodes: 1, held: []int{0, 0, 0, 0, 0, 0, 3}, want: 18000},
		// The experiment's smoke size at a web step: gonum's simplex stepped
		// in place for ever on this one before the bounds were perturbed.
		{name: "a degenerate program ends", nodes: 5, held: []int{1, 4},
			demand: []PodDemand{{Name: "trainer", CPUMilli: 5000, MemMiB: 8 << 10, Min: 4, Max: 12}, pserver4, unboundWeb(4)}, want: 90000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed, total, err := IdealAround(CPU, node, tt.nodes, web, tt.held, tt.demand)
			require.NoError(t, err)
			assert.Equal(t, int64(tt.nodes)*18000, total)
			assert.Equal(t, tt.want, placed)
		})
	}
}

// TestIdealIn: trainers packed into the rooms other pods leave fit
// ⌊free / 5⌋ to a node, up to their maximum.
func TestIdealIn(t *testing.T) {
	room := func(cpu int64, nodes int) Room {
		return Room{Free: NodeShape{CPUMilli: cpu, MemMiB: 90 << 10, Pods: 100}, Nodes: nodes}
	}
	rooms := []Room{room(4000, 2), room(9000, 1), room(15000, 1)}
	trainers := func(lo, hi int) []PodDemand {
		return []PodDemand{{Name: "trainer", CPUMilli: 5000, MemMiB: 8 << 10, Min: lo, Max: hi}}
	}
	for _, tt := range []struct {
		name   string
		demand []PodDemand
		want   int64
	}{
		{name: "no slivers filled", demand: trainers(0, 100), want: 50000 + 4*5000},
		{name: "up to the maximum", demand: trainers(0, 2), want: 50000 + 2*5000},
		{name: "nothing to place", want: 50000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			placed, total, err := IdealIn(CPU, rooms, 50000, 72000, tt.demand)
			require.NoError(t, err)
			assert.Equal(t, int64(72000), total)
			assert.Equal(t, tt.want, placed)
		})
	}
	// A node whose pod count is used up takes no trainer, however much CPU
	// it has left; 0 pods means no limit.
	full := Room{Free: NodeShape{CPUMilli: 18000, MemMiB: 90 << 10, Pods: podsLeft(110, 110)}, Nodes: 1}
	placed, _, err := IdealIn(CPU, []Room{full}, 0, 18000, trainers(0, 100))
	require.NoError(t, err)
	assert.Zero(t, placed)
	unlimited := Room{Free: NodeShape{CPUMilli: 18000, MemMiB: 90 << 10, Pods: podsLeft(0, 5)}, Nodes: 1}
	placed, _, err = IdealIn(CPU, []Room{unlimited}, 0, 18000, trainers(0, 100))
	require.NoError(t, err)
	assert.Equal(t, int64(15000), placed)
}

func TestIdealOfGPU(t *testing.T) {
	gpuNode := NodeShape{CPUMilli: 64000, MemMiB: 512 << 10, GPU: 8, Pods: 110}
	trainer := func(lo, hi int) PodDemand { return GPUTrainerSize.demand("trainer", lo, hi) }
	pserver := func(n int) PodDemand { return PserverSize.demand("pserver", n, n) }
	tests := []struct {
		name   string
		nodes  int
		demand []PodDemand
		want   int64
	}{
		{name: "GPUs bind before CPU", nodes: 4, demand: []PodDemand{trainer(0, 100)}, want: 32},
		{name: "demand below capacity is placed whole", nodes: 4, demand: []PodDemand{trainer(4, 10), pserver(2)}, want: 10},
		// 8 trainers of 6 CPU and 3 pservers of 4 CPU need 60 of the 64
		// CPUs: one node holds them all.
		{name: "pservers use the CPU the trainers leave", nodes: 1, demand: []PodDemand{trainer(0, 8), pserver(3)}, want: 8},
		// 5 pservers and 8 trainers need 68 CPUs: one GPU stays idle.
		{name: "pservers that must run can cost a GPU", nodes: 1, demand: []PodDemand{trainer(0, 8), pserver(5)}, want: 7},
		{name: "CPU-only pods place no GPU", nodes: 2, demand: []PodDemand{pserver(4)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed, total, err := IdealOf(GPU, gpuNode, tt.nodes, tt.demand)
			require.NoError(t, err)
			assert.Equal(t, int64(tt.nodes)*8, total)
			assert.Equal(t, tt.want, placed)
		})
	}
	// The CPU bound of the same pool counts the pservers too.
	placed, _, err := IdealOf(CPU, gpuNode, 1, []PodDemand{trainer(0, 8), pserver(3)})
	require.NoError(t, err)
	assert.Equal(t, int64(60000), placed)
}
