package planner

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// hasNumber matches a reason that says how many trainers move and why, with
// numbers.
var hasNumber = regexp.MustCompile(`^scale (up|down) by [1-9][0-9]*[ :].*[0-9]`)

// assertWellFormed checks what every plan must satisfy.
func assertWellFormed(t *testing.T, snap snapshot.Snapshot, jobs []Job, opts Options, actions []ScaleAction) {
	t.Helper()
	byKey := map[string]Job{}
	for _, j := range jobs {
		byKey[j.Key] = j
	}
	if limit := opts.MaxRebalancePerCycle; limit > 0 {
		var given int32
		for _, a := range actions {
			if a.Cause == CauseRebalance && a.To < a.From {
				given += a.From - a.To
			}
		}
		// Without teams every move is rebalancing's, which makes half of
		// the plan's at most; with teams reclaim may make the rest.
		if opts.Teams == nil {
			limit = rebalanceMoves(limit)
		}
		assert.LessOrEqual(t, given, limit, "rebalancing and reclaim moved more than they may: %v", actions)
	}
	for i, a := range actions {
		j, ok := byKey[a.Job]
		require.True(t, ok, "action for unknown job %s", a.Job)
		assert.NotEqual(t, a.From, a.To, "no-op action for %s", a.Job)
		assert.Equal(t, j.Current, a.From)
		assert.GreaterOrEqual(t, a.To, j.Min, a.Job)
		assert.LessOrEqual(t, a.To, j.Max, a.Job)
		assert.NotEqual(t, j.Min, j.Max, "a job with Min == Max moved")
		assert.Len(t, a.Nodes, int(abs(a.To-a.From)))
		assertPicksWellFormed(t, j, a)
		assert.Regexp(t, hasNumber, a.Reason)
		switch {
		case a.To > a.From && strings.Contains(a.Reason, "gives back"):
			assert.Equal(t, CauseRebalance, a.Cause, a.Job)
		case a.To > a.From:
			assert.Equal(t, CauseIdle, a.Cause, a.Job)
		case strings.Contains(a.Reason, "trainers of priority"):
			assert.Equal(t, CausePriority, a.Cause, a.Job)
		case strings.Contains(a.Reason, "below their minimum"):
			assert.Equal(t, CauseMinimum, a.Cause, a.Job)
		case strings.Contains(a.Reason, "the minimum of queued"):
			assert.Contains(t, []Cause{CauseMinimum, CausePriority}, a.Cause, a.Job)
		case strings.Contains(a.Reason, "the least fulfilled job of priority"), strings.Contains(a.Reason, "go back to team"), strings.Contains(a.Reason, "× as much (priority"):
			assert.Equal(t, CauseRebalance, a.Cause, a.Job)
		case strings.Contains(a.Reason, "the job runs faster without it"):
			assert.Equal(t, CauseSlower, a.Cause, a.Job)
			assert.Equal(t, a.From-1, a.To, "a job gives back one trainer that slows it a plan: %s", a.Job)
		case strings.Contains(a.Reason, "hold or wait for the room") && !strings.Contains(a.Reason, "above max_load_desired"):
			assert.Equal(t, CausePriority, a.Cause, a.Job)
		case strings.Contains(a.Reason, "cannot be scheduled") && !strings.Contains(a.Reason, "above max_load_desired"):
			assert.Equal(t, CauseUnschedulable, a.Cause, a.Job)
		default:
			assert.Equal(t, CauseLoad, a.Cause, a.Job)
			assert.Contains(t, a.Reason, "above max_load_desired", a.Job)
		}
		if i > 0 {
			assert.Less(t, actions[i-1].Job, a.Job, "actions are sorted by job")
		}
	}
	assertGrowthFits(t, snap, jobs, opts, actions)
}

// assertGrowthFits simulates the scale-ups onto the snapshot: no node may go
// over its allocatable and no resource a grown trainer asks for over the
// threshold in the pool it grew in.
func assertGrowthFits(t *testing.T, snap snapshot.Snapshot, jobs []Job, opts Options, actions []ScaleAction) {
	t.Helper()
	threshold := opts.MaxLoadDesired
	if threshold <= 0 {
		threshold = DefaultMaxLoadDesired
	}
	byKey := map[string]Job{}
	for _, j := range jobs {
		byKey[j.Key] = j
	}
	free := snap.NodeResources()
	// Pods in their grace period are going: the load growth tests leaves
	// them out, as the shrinking phases do. Their room is not growth's.
	lp := poolsOf(snap, jobs)
	load, total := lp.base(snap)
	// gone is each node's room held by pods that are going: rebalancing's
	// takers may count on it, growth into idle room may not.
	gone := map[string]vec{}
	going := func(node string, r vec) {
		for _, k := range []int{lp.of[node], lp.count} {
			load[k] = load[k].minus(r)
		}
		gone[node] = gone[node].plus(r)
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Terminating {
			if !opts.Now.After(p.Deadline.Add(SettleSlack)) {
				going(n.Name, vecOf(p.Request))
			}
		}
	}
	// So are the trainers of a scale-down the ReplicaSet has not carried out.
	listed := map[string]bool{}
	for _, n := range snap.Nodes {
		listed[n.Name] = true
	}
	staying := map[string][]TrainerPod{}
	for _, j := range jobs {
		left := append([]TrainerPod(nil), j.Trainers...)
		for len(left) > int(j.Current) {
			kept := removeOne(left, nil)
			for _, p := range left {
				if !slices.ContainsFunc(kept, func(k TrainerPod) bool { return k.Name == p.Name }) && listed[p.Node] {
					going(p.Node, vecOf(p.Request))
				}
			}
			left = kept
		}
		staying[j.Key] = left
	}
	// And the trainers rebalancing gives back: their room is the takers'. A
	// trainer frees what it asks for, which is its template's when it was
	// created, not always the job's now; of two on a node, the plan may
	// give either, and the largest frees the most.
	for _, a := range actions {
		if a.Cause != CauseRebalance || a.To >= a.From {
			continue
		}
		for _, n := range a.Nodes {
			if !listed[n] {
				continue
			}
			req, left, k := byKey[a.Job].Request, staying[a.Job], -1
			for i, p := range left {
				if p.Node == n && (k < 0 || vecOf(left[k].Request).less(vecOf(p.Request))) {
					k = i
				}
			}
			if k >= 0 {
				req = left[k].Request
				staying[a.Job] = slices.Delete(slices.Clone(left), k, k+1)
			}
			going(n, vecOf(req))
		}
	}
	grownRes := make([][numRes]bool, len(load))
	for _, a := range actions {
		if a.To <= a.From {
			continue
		}
		req := byKey[a.Job].Request
		for _, n := range a.Nodes {
			if a.Cause == CauseRebalance {
				// A taker's trainer waits for pods that are going: the node
				// must hold it once they are gone.
				g := gone[n].minus(vecOf(req))
				gone[n] = g
				assert.True(t, vec{free.NodesCPUIdleMilli[n], free.NodesMemoryFreeMega[n], free.NodesGPUFree[n]}.plus(g).max0() ==
					vec{free.NodesCPUIdleMilli[n], free.NodesMemoryFreeMega[n], free.NodesGPUFree[n]}.plus(g),
					"%s's trainer overcommits %s once the going pods are gone", a.Job, n)
				continue
			}
			free.NodesCPUIdleMilli[n] -= req.CPUMilli
			free.NodesMemoryFreeMega[n] -= req.MemoryMega
			free.NodesGPUFree[n] -= req.GPU
			assert.GreaterOrEqual(t, free.NodesCPUIdleMilli[n], int64(0), "CPU of %s overcommitted", n)
			assert.GreaterOrEqual(t, free.NodesMemoryFreeMega[n], int64(0), "memory of %s overcommitted", n)
			assert.GreaterOrEqual(t, free.NodesGPUFree[n], int64(0), "GPU of %s overcommitted", n)
		}
		v, k := vecOf(req), lp.index(a.Job)
		for r := range numRes {
			load[k][r] += v[r] * int64(a.To-a.From)
			grownRes[k][r] = grownRes[k][r] || v[r] > 0
		}
	}
	for k := range load {
		for r := range numRes {
			if grownRes[k][r] {
				assert.LessOrEqual(t, float64(load[k][r]), threshold*float64(total[k][r]), "growth pushed %s over the threshold in pool %d", resNames[r], k)
			}
		}
	}
}

func abs(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

// assertPicksWellFormed: the trainers a scale-down picks are distinct running
// trainers of its job, no more than it removes, on nodes it names; a
// scale-up picks none. A job that names its removals names at least every
// existing trainer the ReplicaSet controller deletes for the scale-down.
func assertPicksWellFormed(t *testing.T, j Job, a ScaleAction) {
	t.Helper()
	if a.To >= a.From {
		assert.Empty(t, a.Remove, "%s picked trainers to grow", a.Job)
		return
	}
	assert.LessOrEqual(t, len(a.Remove), int(a.From-a.To), "%s picked more trainers than it removes", a.Job)
	if j.NamesRemovals {
		// The controller deletes existing−To of the pods, of which
		// existing−From it was deleting already.
		existing := int32(len(j.Trainers)) // #nosec G115 -- a test's few trainers
		deleted := max(0, existing-a.To) - max(0, existing-a.From)
		assert.GreaterOrEqual(t, len(a.Remove), int(deleted), "%s names %v, not every trainer of the %d the controller deletes", a.Job, a.Remove, deleted)
		assertNamed(t, j, a)
		return
	}
	seen := map[string]bool{}
	for _, name := range a.Remove {
		assert.False(t, seen[name], "%s picked %s twice", a.Job, name)
		seen[name] = true
		i := slices.IndexFunc(j.Trainers, func(p TrainerPod) bool { return p.Name == name })
		if !assert.GreaterOrEqual(t, i, 0, "%s picked %s, not its trainer", a.Job, name) {
			continue
		}
		p := j.Trainers[i]
		assert.True(t, p.Node != "" && p.Running(), "%s picked %s, which does not run", a.Job, name)
		assert.Contains(t, a.Nodes, p.Node, "%s picked %s on a node it does not name", a.Job, name)
	}
}

// assertNamed: a job that names its removals names distinct trainers of
// its own.
func assertNamed(t *testing.T, j Job, a ScaleAction) {
	t.Helper()
	seen := map[string]bool{}
	for _, name := range a.Remove {
		assert.False(t, seen[name], "%s named %s twice", a.Job, name)
		seen[name] = true
		assert.True(t, slices.ContainsFunc(j.Trainers, func(p TrainerPod) bool { return p.Name == name }), "%s named %s, not its trainer", a.Job, name)
	}
}
