package trace

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// Namespace is the namespace of the simulated TrainingJobs.
const Namespace = "trace"

// TrainerRequest is one trainer's request: one GPU, with the CPU and
// memory of a quarter of one of Pollux's nodes (an AWS g4dn.12xlarge: 4
// T4 GPUs, 48 vCPUs, 192 GiB) less room for the system, so that GPUs are
// what runs out.
var TrainerRequest = snapshot.Resources{CPUMilli: 8000, MemoryMega: 32 << 10, GPU: 1}

// nodePerGPU is a node's allocatable per GPU it has.
var nodePerGPU = snapshot.Resources{CPUMilli: 12000, MemoryMega: 48 << 10, GPU: 1}

// Scoring is how the simulated kube-scheduler picks a node among those a
// pod fits on: its NodeResourcesFit scoring strategy.
type Scoring string

const (
	// MostAllocated packs: the fullest node first, as a GPU cluster is
	// usually set up.
	MostAllocated Scoring = "MostAllocated"
	// LeastAllocated spreads: the emptiest node first, kube-scheduler's
	// default.
	LeastAllocated Scoring = "LeastAllocated"
)

// pod is one trainer pod.
type pod struct {
	name string
	job  *job
	// node is the index of the node it is bound to, -1 while unbound.
	node    int
	created float64
	// marked: a plan picked it for removal (ScaleAction.Remove): the
	// lowest pod-deletion-cost.
	marked bool
}

// cluster is the simulated nodes, kube-scheduler and ReplicaSet
// controller. Every trainer requests TrainerRequest, so a node holds as
// many as it has GPUs.
type cluster struct {
	names   []string
	gpus    int // per node
	used    []int
	scoring Scoring
	seq     int
}

// newCluster is a cluster of empty nodes, named in their order.
func newCluster(nodes, gpusPerNode int, scoring Scoring) *cluster {
	c := &cluster{gpus: gpusPerNode, used: make([]int, nodes), scoring: scoring}
	for i := range nodes {
		c.names = append(c.names, fmt.Sprintf("node-%03d", i)) // sorted by name as by index
	}
	return c
}

// totalGPUs is the cluster's GPUs.
func (c *cluster) totalGPUs() int { return c.gpus * len(c.used) }

// converge is a ReplicaSet controller's sync of a job at now: it creates
// the missing trainers, or deletes the extra ones — the unbound first,
// then those a plan marked, then the newest — and returns whether a bound
// trainer went.
func (c *cluster) converge(j *job, now float64) (boundGone bool) {
	for len(j.pods) < int(j.replicas) {
		c.seq++
		j.pods = append(j.pods, &pod{name: fmt.Sprintf("%s-trainer-%06d", j.spec.Name, c.seq), job: j, node: -1, created: now})
	}
	extra := len(j.pods) - int(j.replicas)
	if extra <= 0 {
		return false
	}
	slices.SortStableFunc(j.pods, deletionOrder)
	for _, p := range j.pods[:extra] {
		boundGone = boundGone || p.node >= 0
		c.unbind(p)
	}
	j.pods = slices.Clone(j.pods[extra:])
	slices.SortFunc(j.pods, func(a, b *pod) int { return cmp.Compare(a.name, b.name) })
	return boundGone
}

// deletionOrder ranks the pods a ReplicaSet deletes first: unbound, then
// marked, then newest.
func deletionOrder(a, b *pod) int {
	if (a.node < 0) != (b.node < 0) {
		if a.node < 0 {
			return -1
		}
		return 1
	}
	if a.marked != b.marked {
		if a.marked {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(b.created, a.created), cmp.Compare(b.name, a.name))
}

// release deletes all of a job's pods.
func (c *cluster) release(j *job) {
	for _, p := range j.pods {
		c.unbind(p)
	}
	j.pods = nil
}

func (c *cluster) unbind(p *pod) {
	if p.node >= 0 {
		c.used[p.node]--
		p.node = -1
	}
}

// schedule binds the unbound pods, oldest first (the pods are of one
// priority), each to a node with a free GPU by the scoring, and returns
// the jobs that got a pod.
func (c *cluster) schedule(jobs []*job) []*job {
	var queue []*pod
	for _, j := range jobs {
		for _, p := range j.pods {
			if p.node < 0 {
				queue = append(queue, p)
			}
		}
	}
	slices.SortStableFunc(queue, func(a, b *pod) int { return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.name, b.name)) })
	var got []*job
	for _, p := range queue {
		n := c.pick()
		if n < 0 {
			break // every pod needs one GPU: none fits
		}
		p.node = n
		c.used[n]++
		if !slices.Contains(got, p.job) {
			got = append(got, p.job)
		}
	}
	return got
}

// pick is the node the scoring prefers among those with a free GPU, the
// first by name of equals; -1 for none.
func (c *cluster) pick() int {
	best := -1
	for n, used := range c.used {
		if used >= c.gpus {
			continue
		}
		if best < 0 || (c.scoring == LeastAllocated && used < c.used[best]) || (c.scoring != LeastAllocated && used > c.used[best]) {
			best = n
		}
	}
	return best
}

// placement is the trainers of a job on each node it uses, in node order,
// and their count.
func (c *cluster) placement(j *job) ([]int, int) {
	per := make([]int, len(c.used))
	bound := 0
	for _, p := range j.pods {
		if p.node >= 0 {
			per[p.node]++
			bound++
		}
	}
	return slices.DeleteFunc(per, func(n int) bool { return n == 0 }), bound
}

// snapshot is what pkg/cluster would report of the cluster at base+now
// seconds for the jobs' pods: every node counted, the bound trainers as
// load, the unbound ones as unschedulable (the simulated kube-scheduler
// has tried every pod it holds).
func (c *cluster) snapshot(jobs []*job, at func(float64) time.Time) snapshot.Snapshot {
	snap := snapshot.Snapshot{NodeCount: len(c.used), Trainers: map[string][]snapshot.TrainerPod{}}
	for n, used := range c.used {
		alloc := scale(nodePerGPU, int64(c.gpus))
		snap.Nodes = append(snap.Nodes, snapshot.Node{Name: c.names[n], Allocatable: alloc, Free: minus(alloc, scale(TrainerRequest, int64(used)))})
		snap.CPUTotalMilli += alloc.CPUMilli
		snap.MemoryTotalMega += alloc.MemoryMega
		snap.GPUTotal += alloc.GPU
		held := scale(TrainerRequest, int64(used))
		snap.CPURequestMilli, snap.CPULimitMilli = snap.CPURequestMilli+held.CPUMilli, snap.CPULimitMilli+held.CPUMilli
		snap.MemoryRequestMega, snap.MemoryLimitMega = snap.MemoryRequestMega+held.MemoryMega, snap.MemoryLimitMega+held.MemoryMega
		snap.GPURequest, snap.GPULimit = snap.GPURequest+held.GPU, snap.GPULimit+held.GPU
	}
	for _, j := range jobs {
		for _, p := range j.pods {
			tp := snapshot.TrainerPod{Name: p.name, Phase: corev1.PodRunning, Created: at(p.created),
				Request: TrainerRequest, Limits: TrainerRequest}
			if p.node >= 0 {
				tp.Node = c.names[p.node]
			} else {
				tp.Phase, tp.Unschedulable = corev1.PodPending, true
				snap.Pending = append(snap.Pending, snapshot.PendingPod{Namespace: Namespace, Name: p.name, Request: TrainerRequest,
					Job: j.key, Trainer: true, Created: tp.Created})
			}
			snap.Trainers[j.key] = append(snap.Trainers[j.key], tp)
		}
	}
	for _, ts := range snap.Trainers {
		slices.SortFunc(ts, func(a, b snapshot.TrainerPod) int {
			return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
		})
	}
	slices.SortFunc(snap.Pending, func(a, b snapshot.PendingPod) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	return snap
}

// scale is r times k.
func scale(r snapshot.Resources, k int64) snapshot.Resources {
	return snapshot.Resources{CPUMilli: r.CPUMilli * k, MemoryMega: r.MemoryMega * k, GPU: r.GPU * k}
}

// minus is a less b.
func minus(a, b snapshot.Resources) snapshot.Resources {
	return snapshot.Resources{CPUMilli: a.CPUMilli - b.CPUMilli, MemoryMega: a.MemoryMega - b.MemoryMega, GPU: a.GPU - b.GPU}
}
