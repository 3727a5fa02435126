package autoscaler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPickedTrainers: a plan that frees a node for the pending pods of a job
// below its minimum (kube-scheduler preempts for pods of a higher priority
// itself, so these are what the planner frees nodes for) removes the
// running trainers on that node, whatever their age, and names those that
// are not the ones the ReplicaSet controller deletes first (Remove); the
// pods a job loses are never more than the node needs.
func TestPickedTrainers(t *testing.T) {
	n3 := nodes("n", 3, res(8, 64, 0))
	fourCPU, threeCPU := withRequest(res(4, 1, 0)), withRequest(res(3, 1, 0))
	for _, tc := range []struct {
		name       string
		job        Job
		pending    []otherPod
		want       int32
		remove     []string
		sameNode   bool // every trainer removed ran on one node
		noneNamed  bool // the ReplicaSet's own order is the plan's
		removedMax int32
	}{
		{
			// n-1 and n-2 also hold a web pod that stays: only n-0 can be
			// freed, and its trainers are the oldest. Newest first, the
			// ReplicaSet would delete all six before it reached them.
			name: "a pod needs the node of the oldest trainers: those two go",
			job:  newJob("a", withRange(1, 10), threeCPU, runningOn("n-0", "n-0", "n-1", "n-2", "n-1", "n-2")),
			pending: []otherPod{{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(8, 1, 0)},
				{name: "web-1", node: "n-1", priority: 1000, req: res(2, 1, 0)},
				{name: "web-2", node: "n-2", priority: 1000, req: res(2, 1, 0)}},
			want: 4, remove: []string{"a-t0", "a-t1"}, sameNode: true,
		},
		{
			// n-2 holds the two newest.
			name:    "the newest trainers are on the node freed: nothing is named",
			job:     newJob("a", withRange(1, 10), fourCPU, runningOn("n-0", "n-1", "n-0", "n-1", "n-2", "n-2")),
			pending: []otherPod{{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(7, 1, 0)}},
			want:    4, remove: []string{}, noneNamed: true, sameNode: true,
		},
		{
			name: "a pod that fits in one trainer's room takes one trainer",
			job:  newJob("a", withRange(1, 10), fourCPU, runningOn("n-0", "n-0", "n-1", "n-1", "n-2", "n-2")),
			pending: []otherPod{{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(3, 1, 0)},
				{name: "new-trainer-0", job: "ns/new", req: res(3, 1, 0)}},
			want: 4, removedMax: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{tc.job}
			snap := clusterOf(n3, jobs, tc.pending...)
			opts := Options{MaxLoadDesired: 2}
			actions := Plan(snap, jobs, opts)
			assertWellFormed(t, snap, jobs, opts, actions)
			require.Len(t, actions, 1)
			a := actions[0]
			assert.Equal(t, tc.want, a.To)
			if tc.remove != nil {
				assert.ElementsMatch(t, tc.remove, a.Remove)
			}
			if tc.noneNamed {
				assert.Empty(t, a.Remove)
			}
			if tc.sameNode {
				for _, n := range a.Nodes {
					assert.Equal(t, a.Nodes[0], n, "trainers removed from more than one node: %v", a.Nodes)
				}
			}
			if tc.removedMax > 0 {
				assert.LessOrEqual(t, a.From-a.To, tc.removedMax)
			}
		})
	}
}
