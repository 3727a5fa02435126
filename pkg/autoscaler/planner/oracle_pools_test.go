package planner

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// loadPools is the test's own grouping of the snapshot's nodes into the
// pools MaxLoadDesired applies to, node by node and without the planner's
// classes: two nodes are in one pool when some job's trainers may use both,
// or when they agree on every label a placement of the snapshot (the jobs'
// and the pending pods') reads and on their taints — nodes no placement can
// tell apart are one kind of room, whatever runs there.
type loadPools struct {
	of    map[string]int // node name → pool
	jobs  map[string]int // job key → pool; -1 for a job no node takes
	count int
}

func poolsOf(snap snapshot.Snapshot, jobs []Job) loadPools {
	parent := make([]int, len(snap.Nodes))
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			x = parent[x]
		}
		return x
	}
	first := map[string]int{}
	for _, j := range jobs {
		if j.Current < 0 {
			continue // not planned
		}
		first[j.Key] = -1
		for i, n := range snap.Nodes {
			node := &corev1.Node{ObjectMeta: objectMeta(n.Name, n.Labels), Spec: corev1.NodeSpec{Taints: n.Taints}}
			if !mayRun(j.Placement, node) {
				continue
			}
			if first[j.Key] < 0 {
				first[j.Key] = i
			} else {
				parent[find(i)] = find(first[j.Key])
			}
		}
	}
	// Nodes that agree on every label a placement of the snapshot reads
	// and on their taints are one kind of room.
	keys := map[string]bool{}
	for _, j := range jobs {
		j.Placement.LabelKeys(func(k string) { keys[k] = true })
	}
	for i := range snap.Pending {
		snap.Pending[i].Placement.LabelKeys(func(k string) { keys[k] = true })
	}
	alike := map[string]int{}
	for i, n := range snap.Nodes {
		var sig []string
		for k := range keys {
			v, ok := n.Labels[k]
			sig = append(sig, fmt.Sprintf("%s=%v:%s", k, ok, v))
		}
		sort.Strings(sig)
		sig = append(sig, fmt.Sprintf("%v", n.Taints))
		key := strings.Join(sig, ",")
		if first, ok := alike[key]; ok {
			if a, b := find(i), find(first); a != b {
				parent[a] = b
			}
		} else {
			alike[key] = i
		}
	}
	lp := loadPools{of: map[string]int{}, jobs: map[string]int{}}
	ids := map[int]int{}
	for i, n := range snap.Nodes {
		r := find(i)
		if _, ok := ids[r]; !ok {
			ids[r] = len(ids)
		}
		lp.of[n.Name] = ids[r]
	}
	lp.count = len(ids)
	for key, i := range first {
		lp.jobs[key] = -1
		if i >= 0 {
			lp.jobs[key] = ids[find(i)]
		}
	}
	return lp
}

// base returns each pool's requests and allocatable, and the whole
// cluster's at index -1 → len: the snapshot's totals when there is one
// pool, as the planner takes them, the sums of the nodes otherwise.
func (lp loadPools) base(snap snapshot.Snapshot) (load, total []vec) {
	load, total = make([]vec, lp.count+1), make([]vec, lp.count+1)
	whole := lp.count
	load[whole] = vec{snap.CPURequestMilli, snap.MemoryRequestMega, snap.GPURequest}
	total[whole] = vec{snap.CPUTotalMilli, snap.MemoryTotalMega, snap.GPUTotal}
	if lp.count <= 1 {
		if lp.count == 1 {
			load[0], total[0] = load[whole], total[whole]
		}
		return load, total
	}
	for _, n := range snap.Nodes {
		k := lp.of[n.Name]
		alloc := vecOf(n.Allocatable)
		total[k] = total[k].plus(alloc)
		load[k] = load[k].plus(alloc.minus(vecOf(n.Free)))
	}
	return load, total
}

// index returns the pool a job's load is tested in, the whole cluster's
// (len − 1) for a job no node takes.
func (lp loadPools) index(job string) int {
	if k, ok := lp.jobs[job]; ok && k >= 0 {
		return k
	}
	return lp.count
}

// soonBound is at least what the load phase counts besides the bound pods:
// the pods and trainers a plan may give room, which bind within seconds —
// every pending pod and every trainer of a job not scheduled yet, each at
// the largest of the job's request and its pods' (a pod created before the
// template changed asks what it asks). It is added to every pool's load,
// as a pending pod may run in any.
func soonBound(snap snapshot.Snapshot, jobs []Job) vec {
	var v vec
	planned := map[string]bool{}
	for _, j := range jobs {
		planned[j.Key] = true
		placed := 0
		largest := vecOf(j.Request).max0()
		for _, t := range j.Trainers {
			if t.Node != "" {
				placed++
			}
			for r := range numRes {
				largest[r] = max(largest[r], vecOf(t.Request)[r])
			}
		}
		for range max(0, int(j.Current)-placed) {
			v = v.plus(largest)
		}
	}
	for _, p := range snap.Pending {
		if !(p.Trainer && planned[p.Job]) {
			v = v.plus(vecOf(p.Request).max0())
		}
	}
	return v
}

// over reports whether some resource of load exceeds the threshold of
// total.
func over(load, total vec, threshold float64) bool {
	for r := range numRes {
		if float64(load[r]) > threshold*float64(total[r]) {
			return true
		}
	}
	return false
}
