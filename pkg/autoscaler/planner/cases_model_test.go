package planner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// poolNodes returns count nodes named prefix-0.. labelled pool=prefix, with the
// given taints.
func poolNodes(prefix string, count int, alloc Resources, taints ...corev1.Taint) []nodeSpec {
	out := nodes(prefix, count, alloc)
	for i := range out {
		out[i].labels = map[string]string{"pool": prefix}
		out[i].taints = taints
	}
	return out
}

func withPlacement(p *snapshot.Placement) jobMutator { return func(j *Job) { j.Placement = p } }

func inPool(name string) *snapshot.Placement { return placementOf(selecting("pool", name)) }

func onGPUPool() *snapshot.Placement {
	return placementOf(selecting("pool", "gpu"), tolerating(corev1.Toleration{Key: "nvidia.com/gpu",
		Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}))
}

func join(groups ...[]nodeSpec) []nodeSpec {
	var out []nodeSpec
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// modelCases are the rules of the planner's picture of a shared cluster:
// which pending pods count against a job, which nodes count, where pods may
// run, quotas, priorities. Each is named after its rule.
func modelCases() []planCase {
	cpu := poolNodes("cpu", 2, res(8, 64, 0))
	gpu := poolNodes("gpu", 2, res(8, 64, 4), gpuTaint)
	// Ten nodes of 8 CPU, n-9 cordoned: the snapshot does not list it.
	ten := nodes("n", 10, res(8, 64, 0))
	return []planCase{
		{
			name:  "a cordoned node takes its pods' requests out of the load with its allocatable",
			nodes: ten[:9],
			jobs:  []Job{newJob("a", withRange(1, 100), spread(70, ten))},
			// 63 of 72 CPU on the counted nodes (0.875); the original counted
			// all 70 against 72 and was at its threshold.
			want: map[string]int32{"a": 76},
		},
		{
			name:  "growth goes first to the higher priority, then to the least fulfilled",
			nodes: nodes("n", 1, res(3, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("low", withRange(0, 10), withCurrent(0)),
				newJob("high", withRange(0, 10), withPriority(100), runningOn("n-0", "n-0")),
			},
			want: map[string]int32{"high": 3},
		},
		{
			name:  "a job cooling down does not hold back capacity it could never use",
			nodes: join(cpu, gpu),
			opts:  Options{MaxLoadDesired: 1, CoolDown: time.Hour, Now: t0},
			jobs: []Job{
				newJob("gpu", withRange(1, 10), withRequest(res(1, 1, 1)), withPlacement(onGPUPool()),
					runningOn("gpu-0"), scaledDownAt(t0)),
				newJob("cpu", withRange(1, 10), withPlacement(inPool("cpu")), runningOn("cpu-0", "cpu-0")),
			},
			// gpu is the least fulfilled and cools down; cpu may still use
			// the CPU pool, where gpu's trainers could never run.
			want: map[string]int32{"cpu": 10},
		},
		{
			name:  "a job cooling down holds back the capacity it could use",
			nodes: cpu,
			opts:  Options{MaxLoadDesired: 1, CoolDown: time.Hour, Now: t0},
			jobs: []Job{
				newJob("cooling", withRange(1, 10), runningOn("cpu-0"), scaledDownAt(t0)),
				newJob("other", withRange(1, 10), runningOn("cpu-0", "cpu-0")),
			},
			want: map[string]int32{},
		},
		{
			name:  "a job grows only onto nodes its selector and tolerations allow",
			nodes: join(cpu, gpu),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{newJob("gpu", withRange(1, 20), withRequest(res(1, 1, 1)), withPlacement(onGPUPool()),
				runningOn("gpu-0"))},
			want: map[string]int32{"gpu": 8}, // 4 GPUs per node
		},
		{
			name:  "a CPU job does not grow into room that only tainted nodes have",
			nodes: join(poolNodes("cpu", 1, res(2, 64, 0)), gpu),
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("cpu", withRange(1, 20), runningOn("cpu-0", "cpu-0"))},
			want:  map[string]int32{},
		},
		{
			name:  "required node affinity limits growth like a selector",
			nodes: join(poolNodes("a", 1, res(2, 64, 0)), poolNodes("b", 1, res(4, 64, 0))),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{newJob("j", withRange(0, 20), withCurrent(0),
				withPlacement(placementOf(requiring(expr("pool", corev1.NodeSelectorOpNotIn, "b")))))},
			want: map[string]int32{"j": 2},
		},
		{
			name:  "growth stops at the namespace's quota",
			nodes: nodes("n", 1, res(16, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("ns/a", withRange(1, 20), runningOn("n-0"))},
			want:  map[string]int32{"ns/a": 4}, // 3 CPU of quota left
		},
		{
			name:  "a pod the nominated node's going pods make room for keeps that room from growth",
			nodes: nodes("n", 2, res(4, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(0, 10), runningOn("n-1", "n-1", "n-1", "n-1"))},
			others: []otherPod{
				{name: "victim", node: "n-0", req: res(4, 1, 0), terminating: true, deadline: t0.Add(time.Hour)},
				{name: "web", priority: 1000, req: res(4, 1, 0), nominated: "n-0"},
			},
			want: map[string]int32{},
		},
		{
			name:  "a job's pods below its minimum take room only on nodes they may use",
			nodes: join(poolNodes("a", 1, res(8, 64, 0)), poolNodes("b", 1, res(8, 64, 0))),
			opts:  Options{MaxLoadDesired: 2},
			jobs: []Job{newJob("rich", withRange(1, 10), withRequest(res(4, 1, 0)),
				runningOn("b-0", "b-0", "a-0", "a-0"))},
			others: []otherPod{{name: "new-trainer-0", job: "ns/new", req: res(4, 1, 0), placement: inPool("a")}},
			want:   map[string]int32{"rich": 3},
		},
		{
			name:  "nothing is taken for a job's pod that no node would admit even empty",
			nodes: cpu,
			opts:  Options{MaxLoadDesired: 2},
			jobs: []Job{newJob("rich", withRange(1, 10), withRequest(res(4, 1, 0)),
				runningOn("cpu-0", "cpu-0", "cpu-1", "cpu-1"))},
			others: []otherPod{
				{name: "huge-trainer-0", job: "ns/huge", req: res(9, 1, 0)},
				{name: "gpu-trainer-0", job: "ns/gpu", req: res(1, 1, 1), placement: onGPUPool()},
			},
			want: map[string]int32{},
		},
		{
			name:  "a job's pod that may not preempt takes trainers from its own priority only",
			nodes: nodes("n", 1, res(8, 64, 0)),
			opts:  Options{MaxLoadDesired: 2},
			jobs: []Job{newJob("low", withRange(1, 10), withPriority(-1), withRequest(res(4, 1, 0)),
				runningOn("n-0", "n-0"))},
			others: []otherPod{{name: "new-trainer-0", job: "ns/new", req: res(4, 1, 0), never: true}},
			want:   map[string]int32{},
		},
		{
			name:  "a constrained trainer that fits nowhere it may run is given up",
			nodes: join(poolNodes("a", 1, res(2, 64, 0)), poolNodes("b", 1, res(8, 64, 0))),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{newJob("j", withRange(1, 10), withPlacement(inPool("a")), runningOn("a-0", "a-0"),
				unschedulableTrainers(1))},
			want:    map[string]int32{"j": 2},
			reasons: map[string][]string{"j": {"no node it may use has room for one"}},
		},
		{
			name:  "one stray pod of a job's name freezes nothing: another job still yields to load",
			nodes: nodes("n", 1, res(10, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				// converging: 3 pods, 2 replicas (a scale-down under way)
				newJob("converging", withRange(1, 10), runningOn("n-0", "n-0", "n-0"), withCurrent(2)),
				newJob("b", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0")),
			},
			// 12 CPU bound of 10, one of them going: b gives back one.
			want: map[string]int32{"b": 8},
		},
	}
}

func TestPlanModel(t *testing.T) {
	for _, tc := range modelCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "growth stops at the namespace's quota" {
				snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
				q := snapshot.NoQuota
				q.Requests.CPUMilli = 3000
				snap.Quotas = map[string]snapshot.Quota{"ns": q}
				actions := Plan(snap, tc.jobs, tc.opts)
				assert.Equal(t, tc.want["ns/a"], toOf(actions, tc.jobs[0]))
				return
			}
			runPlanCase(t, tc)
		})
	}
}

// TestQuotaCountsReplicasNotCreatedYetAndPods: replicas the ReplicaSet has
// not created are not in the quota's used figures yet; the plan spends them
// first. A pods quota caps growth like a resource one.
func TestQuotaCountsReplicasNotCreatedYetAndPods(t *testing.T) {
	jobs := []Job{newJob("ns/a", withRange(1, 20), runningOn("n-0"), withCurrent(3))}
	snap := clusterOf(nodes("n", 1, res(16, 64, 0)), jobs)
	q := snapshot.NoQuota
	q.Pods = 4
	snap.Quotas = map[string]snapshot.Quota{"ns": q}
	assert.Equal(t, int32(5), toOf(Plan(snap, jobs, Options{MaxLoadDesired: 1}), jobs[0]), "2 of the 4 pods left are the replicas not created")
}

// TestJobsTakeTheirPriorityAndRequestFromTheirTrainers: a trainer's
// spec.priority and its requests as admitted (LimitRange defaults, overhead)
// are what the planner plans with, not what the template says.
func TestJobsTakeTheirPriorityAndRequestFromTheirTrainers(t *testing.T) {
	job := newJob("ns/a", withPriority(7), withRequest(Resources{}))
	job.Trainers = []TrainerPod{
		{Name: "old", Created: t0, Request: res(1, 1, 0), Priority: 5},
		{Name: "new", Created: t0.Add(time.Second), Request: res(2, 2, 0), Limits: res(4, 4, 0), Priority: 1000},
	}
	snap := snapshot.Snapshot{Trainers: map[string][]TrainerPod{"ns/a": job.Trainers}}
	got := JobsFromSnapshot(snap, []Job{{Key: "ns/a", Priority: 7}})
	require.Len(t, got, 1)
	assert.Equal(t, int32(1000), got[0].Priority)
	assert.Equal(t, res(2, 2, 0), got[0].Request)
	assert.Equal(t, res(4, 4, 0), got[0].Limits)
	none := JobsFromSnapshot(snapshot.Snapshot{}, []Job{{Key: "ns/b", Priority: 7, Request: res(1, 1, 0)}})
	assert.Equal(t, int32(7), none[0].Priority, "no trainer yet: the caller's")
}

// TestAZeroNowStillYields: Now is only for the cool-down and for telling a
// stuck terminating pod from one that is going; a zero Now disables nothing.
func TestAZeroNowStillYields(t *testing.T) {
	jobs := []Job{newJob("a", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0"))}
	snap := clusterOf(nodes("n", 1, res(4, 64, 0)), jobs, otherPod{name: "o", node: "n-0", req: res(1, 1, 0)})
	acts := Plan(snap, jobs, Options{MaxLoadDesired: 1})
	require.Len(t, acts, 1)
	assert.Equal(t, CauseLoad, acts[0].Cause)
}
