package planner

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bulkYieldCase is a plan case that also says which nodes each job's removed
// trainers must stand on and how many actions the plan may hold.
type bulkYieldCase struct {
	planCase
	// on maps a job to the nodes its removed running trainers must all
	// stand on, picked: the nodes the pods may use.
	on map[string][]string
	// unmarked lists jobs whose scale-down picks no trainer: any of them
	// makes room, and the ReplicaSet's own choice will do.
	unmarked []string
}

// TestBulkYield: unschedulable pods of a higher priority that may preempt
// are given way to in one plan, one action per job, with the trainers on
// the nodes the pods may use picked — and only those pods, only as many
// trainers as they need, never below a minimum.
func TestBulkYield(t *testing.T) {
	n4 := nodes("n", 4, res(8, 64, 0))
	prioNodes := nodes("n", 3, res(8, 64, 0))
	mixed := join(poolNodes("a", 2, res(8, 64, 0)), poolNodes("b", 2, res(8, 64, 0)))
	for _, tc := range []bulkYieldCase{
		{planCase: planCase{
			name:  "a pod of a higher priority that may preempt: the fewest trainers go, on one node, picked",
			nodes: prioNodes,
			opts:  Options{MaxLoadDesired: 1}, // isolate the priority rule
			jobs: []Job{
				newJob("low", withRange(1, 10), withRequest(res(2, 1, 0)), spread(8, prioNodes[:2])),
				newJob("high", withRange(1, 10), withPriority(2000), withRequest(res(2, 1, 0)), spread(4, prioNodes[2:])),
			},
			// The three kube-scheduler would preempt on one node; the
			// ReplicaSet's newest-first scale-down would have stopped five.
			others:  pendingPods(1, 1000, res(6, 1, 0)),
			want:    map[string]int32{"low": 5},
			reasons: map[string][]string{"low": {"1 unschedulable pod of priority 1000", "make room on 1 node"}},
		}, on: map[string][]string{"low": {"n-1"}}},
		{planCase: planCase{
			name:  "ten pods of a higher priority: one scale-down per job frees room for all of them",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("a", withRange(1, 16), withRequest(res(2, 1, 0)), spread(8, n4)),
				newJob("b", withRange(1, 16), withRequest(res(2, 1, 0)), spread(8, n4)),
			},
			others: pendingPods(10, 1000, res(2, 1, 0)),
			// 20 CPU asked of 32 used: ten trainers go, no more. Each pod
			// fits where any trainer was: no pod-deletion-cost marks.
			want:    map[string]int32{"a": 3, "b": 3},
			reasons: map[string][]string{"a": {"10 unschedulable pods of priority 1000 need 20 CPU"}},
		}, unmarked: []string{"a", "b"}},
		{planCase: planCase{
			name:  "pods take the room an earlier pod's yield left over before more trainers go",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(1, 16), withRequest(res(4, 1, 0)), spread(8, n4))},
			// Three pods of 1 CPU fit where one 4-CPU trainer was.
			others: pendingPods(3, 1000, res(1, 1, 0)),
			want:   map[string]int32{"a": 7},
		}},
		{planCase: planCase{
			name:  "the pods yielded to count as load: the same plan keeps max_load_desired's headroom",
			nodes: n4,
			// 31 of 32 CPU: at the threshold of 0.97, 1 CPU free on n-3.
			jobs:   []Job{newJob("a", withRange(1, 32), withRequest(res(1, 1, 0)), spread(31, n4))},
			others: pendingPods(1, 1000, res(3, 1, 0)),
			// Two trainers on n-3 make room for the pod; once it binds the
			// load is 32 of 32, so a third goes in this plan rather than
			// in one after the pod is bound.
			want: map[string]int32{"a": 28},
		}},
		{planCase: planCase{
			name:  "a pod that fits in the idle room counts as load before it binds",
			nodes: n4,
			// 31 of 32 CPU; the pod takes n-3's last CPU, and the load phase
			// gives that much back in this plan, not once the pod is bound.
			jobs:   []Job{newJob("a", withRange(1, 32), withRequest(res(1, 1, 0)), spread(31, n4))},
			others: pendingPods(1, 1000, res(1, 1, 0)),
			want:   map[string]int32{"a": 30},
		}},
		{planCase: planCase{
			name:  "bulk yield never goes below a minimum",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(12, 16), withRequest(res(2, 1, 0)), spread(16, n4))},
			// Ten pods wait; four trainers above the minimum make room for four.
			others: pendingPods(10, 1000, res(2, 1, 0)),
			want:   map[string]int32{"a": 12},
		}},
		{planCase: planCase{
			name:  "only the trainers on nodes the pods may use go",
			nodes: mixed,
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(1, 16), withRequest(res(4, 1, 0)), spread(8, mixed))},
			others: []otherPod{
				{name: "web-0", priority: 1000, req: res(4, 1, 0), placement: inPool("b")},
				{name: "web-1", priority: 1000, req: res(4, 1, 0), placement: inPool("b")},
				{name: "web-2", priority: 1000, req: res(4, 1, 0), placement: inPool("b")},
			},
			want: map[string]int32{"a": 5},
		}, on: map[string][]string{"a": {"b-0", "b-1"}}},
		{planCase: planCase{
			name:  "a pod that fits nowhere even with every trainer above minimum gone shrinks no one",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			// One trainer above the minimum; the pod needs two on one node.
			jobs:   []Job{newJob("a", withRange(15, 16), withRequest(res(2, 1, 0)), spread(16, n4))},
			others: pendingPods(1, 1000, res(4, 1, 0)),
			want:   map[string]int32{},
		}},
		{planCase: planCase{
			name:   "a pod larger than any node shrinks no one",
			nodes:  n4,
			opts:   Options{MaxLoadDesired: 1},
			jobs:   []Job{newJob("a", withRange(1, 16), withRequest(res(2, 1, 0)), spread(16, n4))},
			others: pendingPods(1, 1000, res(9, 1, 0)),
			want:   map[string]int32{},
		}},
		{planCase: planCase{
			name:   "a pod that may not preempt shrinks no one",
			nodes:  n4,
			opts:   Options{MaxLoadDesired: 1},
			jobs:   []Job{newJob("a", withRange(1, 16), withRequest(res(2, 1, 0)), spread(16, n4))},
			others: []otherPod{{name: "web", priority: 1000, req: res(2, 1, 0), never: true}},
			want:   map[string]int32{},
		}},
		{planCase: planCase{
			name:   "a pod of a lower priority shrinks no one",
			nodes:  n4,
			opts:   Options{MaxLoadDesired: 1},
			jobs:   []Job{newJob("a", withRange(1, 16), withPriority(10), withRequest(res(2, 1, 0)), spread(16, n4))},
			others: pendingPods(3, 5, res(2, 1, 0)),
			want:   map[string]int32{},
		}},
		{planCase: planCase{
			name:  "a pod of the trainers' own priority shrinks no one",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(1, 16), withPriority(10), withRequest(res(2, 1, 0)), spread(16, n4))},
			// kube-scheduler does not preempt for it either.
			others: pendingPods(3, 10, res(2, 1, 0)),
			want:   map[string]int32{},
		}},
		{planCase: planCase{
			name:  "a pod kube-scheduler nominated a node for costs no more trainers",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(1, 16), withRequest(res(2, 1, 0)), spread(15, n4))},
			others: []otherPod{
				{name: "preempted", node: "n-3", req: res(2, 1, 0), terminating: true, deadline: t0.Add(3600e9)},
				{name: "web", priority: 1000, req: res(2, 1, 0), nominated: "n-3"},
			},
			want: map[string]int32{},
		}},
		{planCase: planCase{
			name:  "a pod kube-scheduler has not tried yet shrinks no one while the scheduler may reach it first",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1, Now: t0.Add(UntriedGrace / 2)},
			jobs:  []Job{newJob("a", withRange(1, 16), withRequest(res(2, 1, 0)), spread(16, n4))},
			others: []otherPod{
				{name: "web-0", priority: 1000, req: res(2, 1, 0), untried: true},
				{name: "web-1", priority: 1000, req: res(2, 1, 0), untried: true},
			},
			want: map[string]int32{},
		}},
		{planCase: planCase{
			name:  "pods a busy kube-scheduler has not reached are yielded to",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1, Now: t0.Add(UntriedGrace)},
			jobs:  []Job{newJob("a", withRange(1, 16), withRequest(res(2, 1, 0)), spread(16, n4))},
			others: []otherPod{
				{name: "web-0", priority: 1000, req: res(2, 1, 0), untried: true},
				{name: "web-1", priority: 1000, req: res(2, 1, 0), untried: true},
			},
			want: map[string]int32{"a": 14},
		}},
		{planCase: planCase{
			name:  "the lowest priority gives way first",
			nodes: n4,
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("low", withRange(1, 16), withRequest(res(2, 1, 0)), spread(8, n4)),
				newJob("mid", withRange(1, 16), withPriority(100), withRequest(res(2, 1, 0)), spread(8, n4)),
			},
			others: pendingPods(6, 1000, res(2, 1, 0)),
			want:   map[string]int32{"low": 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actions := runPlanCase(t, tc.planCase)
			seen := map[string]bool{}
			for _, a := range actions {
				require.False(t, seen[a.Job], "two actions for %s", a.Job)
				seen[a.Job] = true
				if on, ok := tc.on[a.Job]; ok {
					for _, n := range a.Nodes {
						assert.Contains(t, on, n, "%s: a trainer on %s went", a.Job, n)
					}
					assert.Len(t, a.Remove, int(a.From-a.To), "%s: every running trainer that goes is picked", a.Job)
				}
				if slices.Contains(tc.unmarked, a.Job) {
					assert.Empty(t, a.Remove, "%s: any trainer makes room; none needs a mark", a.Job)
				}
			}
		})
	}
}
