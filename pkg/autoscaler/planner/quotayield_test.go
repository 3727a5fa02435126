package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// TestAQueuedMinimumTakesItsNamespacesQuotaBack: an elastic job that grew
// to fill its namespace's quota gives trainers above its minimum back for
// the next job of its namespace, whose minimum is admitted in the same
// plan — but never below its minimum, never for a job of a lower priority,
// and nothing when the minimum would still find no room on the nodes.
func TestAQueuedMinimumTakesItsNamespacesQuotaBack(t *testing.T) {
	// A quota of 10 CPUs, 8 of them the running job's trainers: 2 left, and
	// the queued minimum (a pserver and 2 trainers of 1 CPU) needs 3.
	cases := []struct {
		name     string
		nodes    []nodeSpec
		running  Job
		queued   QueuedJob
		admitted bool
		to       int32 // the running job's trainers after the plan
		reason   string
	}{
		{
			name:     "one trainer above the minimum goes back: the minimum is admitted",
			nodes:    nodes("n", 2, res(16, 64, 0)),
			running:  newJob("team/first", withRange(2, 20), withPriority(10), spread(8, nodes("n", 2, res(16, 64, 0)))),
			queued:   queued("team/second", 0, queuedPriority(10)),
			admitted: true, to: 7,
			reason: "the minimum of queued 1 job (team/second) needs 3 CPU, 3072 MiB memory, 0 GPU of namespace team's quota; trainers above this job's minimum give it back",
		},
		{
			name:    "not below its minimum: the queued job waits for quota",
			nodes:   nodes("n", 2, res(16, 64, 0)),
			running: newJob("team/first", withRange(8, 20), withPriority(10), spread(8, nodes("n", 2, res(16, 64, 0)))),
			queued:  queued("team/second", 0, queuedPriority(10)),
			to:      8,
		},
		{
			name:    "not for a job of a lower priority",
			nodes:   nodes("n", 2, res(16, 64, 0)),
			running: newJob("team/first", withRange(2, 20), withPriority(100), spread(8, nodes("n", 2, res(16, 64, 0)))),
			queued:  queued("team/second", 0, queuedPriority(10)),
			to:      8,
		},
		{
			name:    "nothing when the minimum finds no room on the nodes even then",
			nodes:   nodes("n", 1, res(9, 64, 0)),
			running: newJob("team/first", withRange(2, 20), withPriority(10), spread(8, nodes("n", 1, res(9, 64, 0)))),
			queued:  queued("team/second", 0, queuedPriority(10), gang(false, 1, res(7.5, 1, 0), 0, res(1, 1, 0))),
			to:      8,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{tc.running}
			snap := clusterOf(tc.nodes, jobs)
			withQuota(&snap, "team", 2, 10, -1, -1)
			queue := Queue{Jobs: []QueuedJob{tc.queued}}
			d := Decide(snap, jobs, queue, Options{Now: t0})
			assertQueueInvariants(t, snap, jobs, queue, Options{Now: t0}, d)
			assertWellFormed(t, snap, jobs, Options{Now: t0}, d.Actions)
			assert.Equal(t, tc.to, toOf(d.Actions, tc.running), "the running job's trainers")
			if !tc.admitted {
				assert.Empty(t, d.Admitted)
				require.Len(t, d.Waiting, 1)
				if tc.name != "nothing when the minimum finds no room on the nodes even then" {
					assert.Equal(t, v1.ReasonWaitingForQuota, d.Waiting[0].Kind)
				}
				return
			}
			require.Len(t, d.Admitted, 1)
			a, ok := actionFor(d.Actions, tc.running.Key)
			require.True(t, ok)
			assert.Contains(t, a.Reason, tc.reason)
			assert.Equal(t, CauseMinimum, a.Cause)
		})
	}
}
