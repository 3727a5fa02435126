package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restartsOnResize makes the job a torchrun job that last resized at
// lastResize, at a measured cost.
func restartsOnResize(lastResize time.Time, cost time.Duration) jobMutator {
	return func(j *Job) { j.RestartsOnResize, j.LastResize, j.ResizeCost = true, lastResize, cost }
}

// priceCases are the table rows of the price of resizes and of the growth
// margin; each also runs the invariant checks (runPlanCase).
func priceCases() []planCase {
	n4x8 := nodes("n", 4, res(8, 64, 0))
	coolDown := Options{Now: t0, CoolDown: 15 * time.Second}
	capped := Options{Now: t0, CoolDown: 15 * time.Second, MaxGrowPerCycle: 1}
	return []planCase{
		{
			name:  "a job that restarts on resize grows in one step, MaxGrowPerCycle aside",
			nodes: n4x8,
			jobs: []Job{
				newJob("torch", withRange(1, 8), runningOn("n-0"), restartsOnResize(time.Time{}, 0)),
				newJob("paddle", withRange(1, 8), runningOn("n-1")),
			},
			opts: capped,
			want: map[string]int32{"torch": 8, "paddle": 2},
		},
		{
			name:  "held within k × its resize cost: not grown (40 s ago, cost 20 s, cool-down 80 s)",
			nodes: n4x8,
			jobs:  []Job{newJob("torch", withRange(1, 8), runningOn("n-0"), restartsOnResize(t0.Add(-40*time.Second), 20*time.Second))},
			opts:  coolDown,
		},
		{
			name:  "grown once its cool-down is over (90 s ago, cost 20 s)",
			nodes: n4x8,
			jobs:  []Job{newJob("torch", withRange(1, 8), runningOn("n-0"), restartsOnResize(t0.Add(-90*time.Second), 20*time.Second))},
			opts:  coolDown,
			want:  map[string]int32{"torch": 8},
		},
		{
			name:  "the spec's floor holds it longer than its cost",
			nodes: n4x8,
			jobs: []Job{newJob("torch", withRange(1, 8), runningOn("n-0"), restartsOnResize(t0.Add(-90*time.Second), 20*time.Second),
				func(j *Job) { j.MinResizeInterval = 10 * time.Minute })},
			opts: coolDown,
		},
		{
			name:  "a held job is not shrunk for load",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs: []Job{newJob("torch", withRange(1, 4), withCurrent(4), runningOn("n-0", "n-0", "n-0", "n-0"),
				restartsOnResize(t0.Add(-10*time.Second), 20*time.Second))},
			others: []otherPod{{name: "o", node: "n-0", req: res(1, 1, 0)}},
			opts:   coolDown,
		},
		{
			name:  "a held job still yields to a pod of a higher priority",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs: []Job{newJob("torch", withRange(1, 4), withCurrent(4), runningOn("n-0", "n-0", "n-0", "n-0"),
				restartsOnResize(t0.Add(-10*time.Second), 20*time.Second))},
			others: []otherPod{{name: "web", priority: 1000, req: res(2, 1, 0)}},
			opts:   coolDown,
			want:   map[string]int32{"torch": 2},
		},
		{
			name:  "the growth margin: growth stops a point below max_load_desired",
			nodes: n4x8,
			jobs:  []Job{newJob("a", withRange(1, 100), runningOn("n-0"))},
			opts:  Options{Now: t0, GrowMargin: 0.05},
			want:  map[string]int32{"a": 29}, // 29 ≤ 0.92 × 32 < 30
		},
		{
			name:  "the growth margin: a job trimmed to max_load_desired is not grown back",
			nodes: n4x8,
			jobs:  []Job{newJob("a", withRange(1, 100), withCurrent(31), runningOn(roundRobin(4, 31)...))},
			opts:  Options{Now: t0, GrowMargin: 0.01},
		},
	}
}

func TestPlanPrice(t *testing.T) {
	for _, tc := range priceCases() {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// roundRobin names count trainers' nodes n-0..n-(nodes-1) in turn.
func roundRobin(nodes, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("n-%d", i%nodes)
	}
	return out
}

func TestExplainHeldByThePrice(t *testing.T) {
	jobs := []Job{newJob("torch", withRange(1, 8), withCurrent(3), runningOn("n-0", "n-0", "n-0"),
		restartsOnResize(t0.Add(-40*time.Second), 20*time.Second))}
	d := Decide(clusterOf(nodes("n", 4, res(8, 64, 0)), jobs), jobs, Queue{}, Options{Now: t0, CoolDown: 15 * time.Second})
	require.Len(t, d.Jobs, 1)
	assert.Equal(t, LimitCoolDown, d.Jobs[0].Limit)
	assert.Equal(t, 40*time.Second, d.Jobs[0].CoolDownLeft)
	assert.Equal(t, "held at 3 trainers: resized 40s ago, next resize after its 1m20s cool-down (4 × its last resize's cost of 20s); every resize restarts all of its trainers",
		d.Jobs[0].Message)
}

// TestPlanNamesEveryRemovalOfAJobThatAsks: a job that names its removals
// (a Horovod job's host-discovery file must drop a trainer before its pod
// goes) gets, on every scale-down, the name of each existing trainer the
// ReplicaSet controller deletes, in the controller's order: the pending
// ones, then the newest running; a job that does not ask gets only the
// trainers picked by node.
func TestPlanNamesEveryRemovalOfAJobThatAsks(t *testing.T) {
	names := func(j *Job) { j.NamesRemovals = true }
	// One node of 4 CPU; a pod of a higher priority asks for 2 of them,
	// which leaves the job one trainer of 1 CPU under max_load_desired.
	for _, tc := range []struct {
		name string
		job  Job
		want []string
	}{
		{"the newest running first", newJob("hvd", withRange(1, 4), runningOn("n-0", "n-0", "n-0", "n-0"), names),
			[]string{"hvd-t3", "hvd-t2", "hvd-t1"}},
		{"the pending trainer, then the newest running", newJob("hvd", withRange(1, 4), runningOn("n-0", "n-0", "n-0"), unschedulableTrainers(1), names),
			[]string{"hvd-t3", "hvd-t2", "hvd-t1"}},
		{"a replica not yet created goes first, unnamed", newJob("hvd", withRange(1, 4), withCurrent(4), runningOn("n-0", "n-0", "n-0"), names),
			[]string{"hvd-t2", "hvd-t1"}},
		{"not asked: only the trainers picked by node", newJob("hvd", withRange(1, 4), runningOn("n-0", "n-0", "n-0", "n-0")),
			[]string{"hvd-t3", "hvd-t2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := otherPod{name: "web", priority: 1000, req: res(2, 1, 0)}
			snap := clusterOf(nodes("n", 1, res(4, 64, 0)), []Job{tc.job}, web)
			actions := Plan(snap, []Job{tc.job}, Options{Now: t0})
			require.Len(t, actions, 1)
			assert.Equal(t, int32(1), actions[0].To)
			assert.Equal(t, tc.want, actions[0].Remove)
		})
	}
}
