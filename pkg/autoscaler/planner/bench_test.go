package planner

import (
	"fmt"
	"math/rand"
	"sort"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// benchScenario builds a cluster at the scale of the goal (5,000 nodes,
// 150,000 pods, 1,000 jobs at nodes=5000) that exercises every phase: 30 pods
// per node (10 ordinary pods, 20 trainers of nodes/5 jobs), about 6% of
// capacity idle so that growth runs into the 0.97 threshold, a few replicas
// not created yet, and unschedulable high-priority pods that fit only after
// one, two or seven trainers leave a node.
func benchScenario(nodeCount int) (snapshot.Snapshot, []Job) {
	return buildBenchScenario(nodeCount, false)
}

// rebalanceScenario is benchScenario with the nodes full (12 ordinary pods
// each, 2 CPU left, less than a trainer), no pending pods, and the jobs
// uneven: every other job holds 150 trainers, the rest 50, so that the plan
// is all rebalancing.
func rebalanceScenario(nodeCount int) (snapshot.Snapshot, []Job) {
	return buildBenchScenario(nodeCount, true)
}

func buildBenchScenario(nodeCount int, uneven bool, teams ...int) (snapshot.Snapshot, []Job) {
	rng := rand.New(rand.NewSource(int64(nodeCount)))
	ns := make([]nodeSpec, nodeCount)
	for i := range ns {
		alloc := res(64, 256, 0)
		if i%10 == 0 {
			alloc.GPU = 8
		}
		ns[i] = nodeSpec{name: fmt.Sprintf("node-%05d", i), alloc: alloc}
	}
	ordinary := 10
	if uneven {
		ordinary = 12
	}
	var others []otherPod
	for i, n := range ns {
		for k := range ordinary {
			others = append(others, otherPod{name: fmt.Sprintf("o-%d-%d", i, k), node: n.name, req: res(1, 2, 0)})
		}
	}
	jobs := make([]Job, nodeCount/5)
	slots := make([]int, 0, nodeCount*20)
	for i := range ns {
		for range 20 {
			slots = append(slots, i)
		}
	}
	rng.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	next := 0
	for i := range jobs {
		j := Job{Key: fmt.Sprintf("ns/job-%04d", i), Min: 10, Max: 200, Priority: int32(i % 3), Request: res(2.5, 8, 0)}
		if len(teams) > 0 {
			j.Key = fmt.Sprintf("team-%02d/job-%04d", i%teams[0], i)
		}
		count := 100
		if uneven {
			// Pairs of one priority: one job of 150 trainers, one of 50.
			j.Priority = int32((i / 2) % 3)
			count = 150 - 100*(i%2)
		}
		for k := range count {
			j.Trainers = append(j.Trainers, TrainerPod{
				Name: fmt.Sprintf("job-%04d-%03d", i, k), Node: ns[slots[next]].name, Phase: corev1.PodRunning,
				Created: t0.Add(time.Duration(rng.Intn(3600)) * time.Second), Request: j.Request,
			})
			next++
		}
		// Oldest first, as the snapshot reports them.
		sort.Slice(j.Trainers, func(a, b int) bool { return olderTrainer(&j.Trainers[a], &j.Trainers[b]) })
		j.Current = int32(count)
		if i%10 == 0 && !uneven {
			j.Current += 2 // two replicas the ReplicaSet controller has not created yet
		}
		jobs[i] = j
	}
	if uneven {
		return clusterOf(ns, jobs, others...), jobs
	}
	// Pods of a higher priority that may preempt, and the pods of new jobs
	// below their minimum, of the jobs' priorities: they fit only after one,
	// two or seven trainers leave a node.
	for k := range max(1, nodeCount/100) {
		others = append(others,
			otherPod{name: fmt.Sprintf("p3-%d", k), priority: 1000, req: res(3, 4, 0)},
			otherPod{name: fmt.Sprintf("p8-%d", k), priority: 1000, req: res(8, 16, 0)},
			otherPod{name: fmt.Sprintf("new3-%d", k), job: fmt.Sprintf("ns/new-%d", k), notTrainer: true, priority: 2, req: res(3, 4, 0)},
			otherPod{name: fmt.Sprintf("new8-%d", k), job: fmt.Sprintf("ns/new-%d", k), priority: 2, req: res(8, 16, 0)},
		)
	}
	for k := range max(1, nodeCount/1000) {
		others = append(others, otherPod{name: fmt.Sprintf("new20-%d", k), job: fmt.Sprintf("ns/big-%d", k), priority: 2, req: res(20, 16, 0)})
	}
	// 200 distinct pods that fit nowhere: bigger than any node. Half are
	// pods of new jobs, which the planner must not search evictions for.
	for k := range 200 {
		o := otherPod{name: fmt.Sprintf("huge-%d", k), priority: int32(k % 3), req: res(65+float64(k), 4, 0)}
		if k%2 == 0 {
			o.job = fmt.Sprintf("ns/huge-%d", k)
		}
		others = append(others, o)
	}
	return clusterOf(ns, jobs, others...), jobs
}

// poolsScenario is benchScenario on a cluster of pools: ten CPU pools told
// apart by a label, two of GPU nodes tainted nvidia.com/gpu=present:NoSchedule,
// and jobs with and without selectors and tolerations.
func poolsScenario(nodeCount int) (snapshot.Snapshot, []Job) {
	snap, jobs := benchScenario(nodeCount)
	gpu := onGPUPool()
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		p := i % 12
		n.Labels = map[string]string{"pool": fmt.Sprintf("pool-%d", p), "kubernetes.io/hostname": n.Name}
		if p >= 10 {
			n.Labels["pool"] = "gpu"
			n.Labels["gpu-pool"] = fmt.Sprintf("g%d", p)
			n.Taints = []corev1.Taint{gpuTaint}
			n.Allocatable.GPU, n.Free.GPU = 8, 8+n.Free.GPU-n.Allocatable.GPU
		}
	}
	for i := range jobs {
		switch i % 4 {
		case 1:
			jobs[i].Placement = inPool(fmt.Sprintf("pool-%d", i%10))
		case 2:
			jobs[i].Placement = gpu
		case 3:
			jobs[i].Placement = placementOf(requiring(expr("pool", corev1.NodeSelectorOpIn, "pool-1", "pool-2", "pool-3")))
		}
	}
	for i := range snap.Pending {
		if i%3 == 0 {
			snap.Pending[i].Placement = inPool(fmt.Sprintf("pool-%d", i%10))
		}
	}
	return snap, jobs
}

// cpuTime is the user and system CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkPlan(b *testing.B) { benchmarkPlan(b, benchScenario) }

// BenchmarkPlanPools measures a plan on a cluster of labelled and tainted
// pools, where placements decide which nodes each job and pod may use.
func BenchmarkPlanPools(b *testing.B) { benchmarkPlan(b, poolsScenario) }

// BenchmarkPlanRebalance measures a plan that is all rebalancing.
func BenchmarkPlanRebalance(b *testing.B) { benchmarkPlan(b, rebalanceScenario) }

// BenchmarkPlanTeams is BenchmarkPlan with the jobs in the namespaces of 20
// teams of weights 1 to 4: the teams' shares and growth's order by team.
func BenchmarkPlanTeams(b *testing.B) {
	teams := make([]Team, 20)
	for i := range teams {
		name := fmt.Sprintf("team-%02d", i)
		teams[i] = Team{Name: name, Namespaces: []string{name}, Weight: int32(1 + i%4)}
	}
	scenario := func(n int) (snapshot.Snapshot, []Job) { return buildBenchScenario(n, false, len(teams)) }
	benchmarkPlanner(b, scenario, func(snap snapshot.Snapshot, jobs []Job, opts Options) []ScaleAction {
		opts.Teams = teams
		return Plan(snap, jobs, opts)
	})
}

// BenchmarkPlanGoodput is BenchmarkPlan under the goodput policy, every
// other job reporting how it scales (one of three models, in turn), the
// rest nothing: the order by speedup, the models' predictions, the gain
// and price stops.
func BenchmarkPlanGoodput(b *testing.B) {
	models := fuzzModels()
	scenario := func(n int) (snapshot.Snapshot, []Job) {
		snap, jobs := benchScenario(n)
		for i := 0; i < len(jobs); i += 2 {
			jobs[i].Progress = &Progress{Model: models[i%len(models)], Batch: goodputBatch, Nodes: 1, Left: time.Hour}
		}
		return snap, jobs
	}
	benchmarkPlanner(b, scenario, func(snap snapshot.Snapshot, jobs []Job, opts Options) []ScaleAction {
		opts.Policy = PolicyGoodput
		return Plan(snap, jobs, opts)
	})
}

func benchmarkPlan(b *testing.B, scenario func(int) (snapshot.Snapshot, []Job)) {
	benchmarkPlanner(b, scenario, Plan)
}

func benchmarkPlanner(b *testing.B, scenario func(int) (snapshot.Snapshot, []Job),
	plan func(snapshot.Snapshot, []Job, Options) []ScaleAction) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			snap, jobs := scenario(n)
			actions := plan(snap, jobs, Options{})
			up, down := 0, 0
			for _, a := range actions {
				if a.To > a.From {
					up += int(a.To - a.From)
				} else {
					down += int(a.From - a.To)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			before := cpuTime()
			for range b.N {
				plan(snap, jobs, Options{})
			}
			// Wall time is noisy on a shared machine; the process's CPU time
			// (GC included) per plan is what the goal is about.
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(up), "trainers-added")
			b.ReportMetric(float64(down), "trainers-removed")
		})
	}
}
