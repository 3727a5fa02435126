package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// anywhere tolerates the GPU taint and selects nothing: its trainers may
// use every node.
func anywhere() *snapshot.Placement {
	return placementOf(tolerating(corev1.Toleration{Key: "nvidia.com/gpu",
		Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}))
}

// poolCases are the rules of MaxLoadDesired on a cluster of two pools: two
// CPU nodes of 8 CPU and two tainted GPU nodes of 8 CPU and 4 GPUs, 32 CPU
// in all, at a threshold of 0.75. A job's load is its pool's: 12 CPU of
// the CPU nodes' 16, not 24 of the cluster's 32.
func poolCases() []planCase {
	cpu := poolNodes("cpu", 2, res(8, 64, 0))
	gpu := poolNodes("gpu", 2, res(8, 64, 4), gpuTaint)
	both := join(cpu, gpu)
	opts := Options{MaxLoadDesired: 0.75}
	// gpuFull: a GPU job at its minimum whose 8 trainers take every CPU of
	// the GPU nodes.
	gpuFull := newJob("gpu", withRange(8, 16), withRequest(res(2, 1, 1)), withPlacement(onGPUPool()),
		runningOn("gpu-0", "gpu-0", "gpu-0", "gpu-0", "gpu-1", "gpu-1", "gpu-1", "gpu-1"))
	sixteen := []string{"cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0",
		"cpu-1", "cpu-1", "cpu-1", "cpu-1", "cpu-1", "cpu-1", "cpu-1", "cpu-1"}
	return []planCase{
		{
			name:  "a CPU job grows to its pool's threshold, not into the GPU nodes' idle CPUs",
			nodes: both,
			opts:  opts,
			jobs:  []Job{newJob("cpu", withRange(1, 20), runningOn("cpu-0", "cpu-0"))},
			// The cluster's threshold would let it take all 16 CPU nodes' CPUs.
			want:    map[string]int32{"cpu": 12},
			reasons: map[string][]string{"cpu": {"scale up by 10: 14 CPU, 129024 MiB memory, 0 GPU idle on 2 nodes of its pool"}},
		},
		{
			name:  "a CPU job over its pool's threshold gives back while the cluster is under",
			nodes: both,
			opts:  opts,
			jobs:  []Job{newJob("cpu", withRange(1, 20), runningOn(sixteen...))},
			// 16 of the CPU nodes' 16 CPU; the cluster is at 16 of 32.
			want:    map[string]int32{"cpu": 12},
			reasons: map[string][]string{"cpu": {"scale down by 4: CPU load 1 on its pool above max_load_desired 0.75"}},
		},
		{
			name:  "a full GPU pool does not hold back the CPU pool",
			nodes: both,
			opts:  opts,
			jobs:  []Job{gpuFull, newJob("cpu", withRange(1, 20), runningOn("cpu-0"))},
			// The cluster's CPU load (17 of 32) would stop cpu at 8; the GPU
			// job is at its minimum, over its pool's threshold.
			want: map[string]int32{"cpu": 12},
		},
		{
			name:  "a job that may run anywhere joins the pools into one",
			nodes: both,
			opts:  opts,
			jobs: []Job{
				newJob("cpu", withRange(1, 20), runningOn(sixteen...)),
				newJob("any", withRange(0, 4), withPlacement(anywhere()), withCurrent(0)),
			},
			// One pool of 32 CPU at 16: nothing is over, and any grows into
			// the GPU nodes by the cluster's threshold (24).
			want:    map[string]int32{"any": 4},
			reasons: map[string][]string{"any": {"idle on 2 nodes;"}},
		},
		{
			name:  "rebalancing moves trainers within a pool when the least fulfilled job is in another",
			nodes: both,
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				// gpu is at its minimum on a full GPU pool: the least
				// fulfilled job, and no node of the CPU pool is of use to it.
				newJob("gpu", withRange(8, 16), withRequest(res(1, 1, 1)), withPlacement(onGPUPool()),
					runningOn("gpu-0", "gpu-0", "gpu-0", "gpu-0", "gpu-1", "gpu-1", "gpu-1", "gpu-1")),
				newJob("rich", withRange(1, 20), runningOn(sixteen[:14]...)),
				newJob("poor", withRange(1, 20), runningOn("cpu-1", "cpu-1")),
			},
			want: map[string]int32{"rich": 8, "poor": 8},
			reasons: map[string][]string{
				"rich": {"the least fulfilled job of priority 0", "poor"},
				"poor": {"scale up by 6: rich, more fulfilled (0.368), gives back 6 trainers"},
			},
		},
	}
}

func TestPlanPools(t *testing.T) {
	for _, tc := range poolCases() {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// TestExplanationsQuoteThePool: a job growth let go at its pool's
// threshold is told the pool's figures, and a job held at its minimum the
// pool's load.
func TestExplanationsQuoteThePool(t *testing.T) {
	cpu := poolNodes("cpu", 2, res(8, 64, 0))
	gpu := poolNodes("gpu", 2, res(8, 64, 4), gpuTaint)
	jobs := []Job{
		newJob("gpu", withRange(8, 16), withRequest(res(2, 1, 1)), withPlacement(onGPUPool()),
			runningOn("gpu-0", "gpu-0", "gpu-0", "gpu-0", "gpu-1", "gpu-1", "gpu-1", "gpu-1")),
		newJob("cpu", withRange(1, 20), runningOn("cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0", "cpu-0",
			"cpu-1", "cpu-1", "cpu-1", "cpu-1")),
	}
	snap := clusterOf(join(cpu, gpu), jobs)
	d := Decide(snap, jobs, Queue{}, Options{MaxLoadDesired: 0.75})
	assert.Empty(t, d.Actions)
	byJob := map[string]Explanation{}
	for _, e := range d.Jobs {
		byJob[e.Job] = e
	}
	c := byJob["cpu"]
	assert.Equal(t, LimitLoad, c.Limit, c.Message)
	assert.Contains(t, c.Message, "12 CPU of 16 CPU requested on its pool of 2 nodes (load 0.75)")
	g := byJob["gpu"]
	assert.Equal(t, LimitAtMin, g.Limit, g.Message)
	assert.InDelta(t, 1.0, g.Load, 1e-9, "the GPU nodes' CPU load, not the cluster's 0.875")
	assert.Contains(t, g.Message, "CPU load 1 on its pool is above max_load_desired 0.75")
}

// TestATrainerLargerThanItsPoolIsNoEligibleNode: a trainer bigger than
// every node of its pool also passes the pool's threshold; the explanation
// names the nodes' size, which no load will change.
func TestATrainerLargerThanItsPoolIsNoEligibleNode(t *testing.T) {
	ns := join(poolNodes("small", 1, res(8, 64, 0)), poolNodes("cpu", 2, res(16, 64, 0)))
	// Its one trainer runs on a larger node, cordoned since: the snapshot
	// leaves it out.
	jobs := []Job{newJob("big", withRange(1, 3), withRequest(res(10, 1, 0)), withPlacement(inPool("small")), runningOn("cordoned"))}
	d := Decide(clusterOf(ns, jobs), jobs, Queue{}, Options{})
	assert.Empty(t, d.Actions)
	require.Len(t, d.Jobs, 1)
	e := d.Jobs[0]
	assert.Equal(t, LimitNoEligibleNode, e.Limit, e.Message)
	assert.Contains(t, e.Message, "one trainer needs 10 CPU, 1024 MiB memory, 0 GPU, more than any node it may use: the largest, small-0, has 8 CPU")
}
