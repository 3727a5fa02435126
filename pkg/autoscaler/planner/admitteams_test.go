package planner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// TestAdmissionByTeam: with teams, the queue serves, of one priority, the
// team that uses the least of the cluster for its weight first; each team's
// queue has a head of its own; and a running job of another team is stopped
// whole only for a team within its guarantee, and only if its own team is
// above its share.
func TestAdmissionByTeam(t *testing.T) {
	ns := nodes("n", 2, res(16, 64, 0))
	teams := []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 1}}
	job := func(key string, age time.Duration, cpu float64, muts ...queuedMutator) QueuedJob {
		return queued(key, age, append([]queuedMutator{gang(false, 0, res(1, 1, 0), 1, res(cpu, 1, 0))}, muts...)...)
	}

	t.Run("of one priority, the team that uses less goes first, though its job is newer", func(t *testing.T) {
		// Team a runs 12 CPU; 20 CPU are free, room for one of the two.
		snap := clusterOf(ns, nil, otherPod{name: "a-run", node: "n-0", req: res(12, 1, 0)})
		runningWhole(&snap, "a/run", otherPod{name: "a-run", node: "n-0", req: res(12, 1, 0)})
		queue := Queue{Jobs: []QueuedJob{job("a/old", 0, 12), job("b/new", time.Minute, 12)}}
		d := decideQueue(t, snap, nil, queue, Options{Now: t0, Teams: teams})
		assert.Equal(t, []string{"b/new"}, admittedKeys(d))
		assert.Equal(t, v1.ReasonWaitingForAdmission, kindOf(d, "a/old"))

		d = decideQueue(t, snap, nil, queue, Options{Now: t0})
		assert.Equal(t, []string{"a/old"}, admittedKeys(d), "without teams the oldest goes first")
	})
	t.Run("a higher priority still goes first", func(t *testing.T) {
		snap := clusterOf(ns, nil, otherPod{name: "a-run", node: "n-0", req: res(12, 1, 0)})
		runningWhole(&snap, "a/run", otherPod{name: "a-run", node: "n-0", req: res(12, 1, 0)})
		queue := Queue{Jobs: []QueuedJob{job("a/old", 0, 12, queuedPriority(10)), job("b/new", time.Minute, 12)}}
		d := decideQueue(t, snap, nil, queue, Options{Now: t0, Teams: teams})
		assert.Equal(t, []string{"a/old"}, admittedKeys(d))
	})
	t.Run("one team's big head does not hold another team's queue", func(t *testing.T) {
		// 6 CPU free on each node: a/big (14 CPU) waits and keeps both
		// nodes; a/small waits behind it, b/small starts.
		snap := clusterOf(ns, nil, otherPod{name: "x", node: "n-0", req: res(10, 1, 0)}, otherPod{name: "y", node: "n-1", req: res(10, 1, 0)})
		queue := Queue{Jobs: []QueuedJob{job("a/big", 0, 14), job("a/small", time.Second, 3), job("b/small", 2*time.Second, 3)}}
		d := decideQueue(t, snap, nil, queue, Options{Now: t0, Teams: teams})
		assert.Equal(t, []string{"b/small"}, admittedKeys(d))
		assert.Equal(t, v1.ReasonReservedForHead, kindOf(d, "a/small"))
		assert.Contains(t, reasonOf(d, "a/small"), "only on nodes kept for a/big")

		d = decideQueue(t, snap, nil, queue, Options{Now: t0})
		assert.Empty(t, admittedKeys(d), "without teams one head holds every job")
	})
	t.Run("a team above the head's team is held by it", func(t *testing.T) {
		// b already runs 8 CPU, a nothing: a/big's nodes are kept from b.
		snap := clusterOf(ns, nil, otherPod{name: "x", node: "n-0", req: res(10, 1, 0)}, otherPod{name: "b-run", node: "n-1", req: res(10, 1, 0)})
		runningWhole(&snap, "b/run", otherPod{name: "b-run", node: "n-1", req: res(10, 1, 0)})
		queue := Queue{Jobs: []QueuedJob{job("a/big", 0, 14), job("b/small", time.Second, 3)}}
		d := decideQueue(t, snap, nil, queue, Options{Now: t0, Teams: teams})
		assert.Empty(t, admittedKeys(d))
		assert.Equal(t, v1.ReasonReservedForHead, kindOf(d, "b/small"))
		assert.True(t, d.Waiting[0].Head, "a/big is a's head")
	})
	t.Run("each team waits behind a head of its own", func(t *testing.T) {
		snap := clusterOf(ns, nil, otherPod{name: "x", node: "n-0", req: res(10, 1, 0)}, otherPod{name: "y", node: "n-1", req: res(10, 1, 0)})
		queue := Queue{Jobs: []QueuedJob{job("a/big", 0, 14), job("b/big", time.Second, 14)}}
		d := decideQueue(t, snap, nil, queue, Options{Now: t0, Teams: teams})
		require.Len(t, d.Waiting, 2)
		assert.True(t, d.Waiting[0].Head && d.Waiting[1].Head, "both are heads: %+v", d.Waiting)
	})

	// Preemption across teams. Team a (weight 3) runs 16 CPU on n-0, the
	// default team's other/run 16 CPU on n-1; b, guaranteed 16 CPU, queues
	// 10 CPU of priority 10. With the load threshold at 1 the shares are b
	// 10 (its guarantee), a 16 (at its share), the default team 6 (using 16,
	// above it).
	three := []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 3},
		{Name: "b", Namespaces: []string{"b"}, Weight: 1, Guarantee: snapshot.Resources{CPUMilli: 16000}}}
	build := func() snapshot.Snapshot {
		a, o := otherPod{name: "a-run", node: "n-0", req: res(16, 1, 0)}, otherPod{name: "o-run", node: "n-1", req: res(16, 1, 0)}
		snap := clusterOf(ns, nil, a, o)
		runningWhole(&snap, "a/run", a)
		runningWhole(&snap, "other/run", o)
		return snap
	}
	// a/run is of the lowest priority and the newest: without teams it
	// would go first.
	running := []RunningJob{{Key: "a/run", Priority: -1, Created: t0.Add(time.Hour)}, {Key: "other/run", Priority: 0, Created: t0}}
	high := job("b/high", 0, 10, queuedPriority(10))
	opts := Options{Now: t0, Preemption: true, MaxLoadDesired: 1}

	t.Run("never a job of a team at its share", func(t *testing.T) {
		o := opts
		o.Teams = three
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, o)
		require.Len(t, d.Preempted, 1)
		assert.Equal(t, "other/run", d.Preempted[0].Job, "the default team is above its share, a is at it")

		d = decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, opts)
		require.Len(t, d.Preempted, 1)
		assert.Equal(t, "a/run", d.Preempted[0].Job, "without teams the lowest priority goes")
	})
	t.Run("only for a team within its guarantee", func(t *testing.T) {
		o := opts
		o.Teams = []Team{three[0], {Name: "b", Namespaces: []string{"b"}, Weight: 1}}
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, o)
		assert.Empty(t, d.Preempted, "b has no guarantee")
		assert.Equal(t, v1.ReasonWaitingForAdmission, kindOf(d, "b/high"))

		o.Teams = []Team{three[0], {Name: "b", Namespaces: []string{"b"}, Weight: 1, Guarantee: snapshot.Resources{CPUMilli: 8000}}}
		d = decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, o)
		assert.Empty(t, d.Preempted, "b's 10 CPU are above its guarantee of 8")
	})
	t.Run("a job of its own team by priority alone", func(t *testing.T) {
		o := opts
		o.Teams = []Team{{Name: "a", Namespaces: []string{"a", "b"}, Weight: 3}}
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, o)
		require.Len(t, d.Preempted, 1)
		assert.Equal(t, "a/run", d.Preempted[0].Job)
	})
}
