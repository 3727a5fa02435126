package planner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// The rules of the queue beyond fitting on nodes: the namespace's quota,
// the head's reservation and preemption. Every case also runs the
// invariants of the queue (assertQueueInvariants).

// withQuota sets namespace ns's quota room (left) and hard limits on CPU
// requests and pods (Unlimited for -1).
func withQuota(snap *snapshot.Snapshot, ns string, leftCPU, hardCPU float64, leftPods, hardPods int64) {
	if snap.Quotas == nil {
		snap.Quotas, snap.QuotaHard = map[string]snapshot.Quota{}, map[string]snapshot.Quota{}
	}
	left, hard := snapshot.NoQuota, snapshot.NoQuota
	if leftCPU >= 0 {
		left.Requests.CPUMilli, hard.Requests.CPUMilli = int64(leftCPU*1000), int64(hardCPU*1000)
	}
	if leftPods >= 0 {
		left.Pods, hard.Pods = leftPods, hardPods
	}
	snap.Quotas[ns], snap.QuotaHard[ns] = left, hard
}

// runningWhole adds a running job's bound pods to the snapshot (as servers,
// which preemption frees), for a job the plan does not scale.
func runningWhole(snap *snapshot.Snapshot, key string, pods ...otherPod) {
	if snap.Servers == nil {
		snap.Servers = map[string][]TrainerPod{}
	}
	for _, o := range pods {
		snap.Servers[key] = append(snap.Servers[key], TrainerPod{Name: o.name, Node: o.node, Phase: corev1.PodRunning, Request: o.req})
	}
}

func decideQueue(t *testing.T, snap snapshot.Snapshot, jobs []Job, queue Queue, opts Options) Decision {
	t.Helper()
	d := Decide(snap, jobs, queue, opts)
	assertQueueInvariants(t, snap, jobs, queue, opts, d)
	assertExplained(t, jobs, opts, d)
	return d
}

func kindOf(d Decision, key string) string {
	for _, w := range d.Waiting {
		if w.Job == key {
			return w.Kind
		}
	}
	return ""
}

func reasonOf(d Decision, key string) string {
	for _, w := range d.Waiting {
		if w.Job == key {
			return w.Reason
		}
	}
	return ""
}

func TestDecideQueueRules(t *testing.T) {
	ns := nodes("n", 2, res(16, 64, 0))
	big := queued("team-a/big", 0, gang(false, 2, res(1, 1, 0), 12, res(1, 1, 0))) // 14 CPU, 14 pods
	small := queued("team-a/small", time.Second)                                   // 3 CPU, 3 pods
	other := queued("team-b/small", 2*time.Second)
	for _, tc := range []struct {
		name     string
		snap     func() snapshot.Snapshot
		queue    []QueuedJob
		admitted []string
		kinds    map[string]string
		reason   map[string]string
	}{{
		name: "a minimum the quota cannot hold now waits, naming the quota and the shortfall",
		snap: func() snapshot.Snapshot {
			s := clusterOf(ns, nil)
			withQuota(&s, "team-a", 6, 20, -1, 0)
			return s
		},
		queue:  []QueuedJob{big},
		kinds:  map[string]string{"team-a/big": v1.ReasonWaitingForQuota},
		reason: map[string]string{"team-a/big": "position 1 of 1 in the queue: namespace team-a quota requests.cpu: 6 CPU left, the minimum needs 14 CPU"},
	}, {
		name: "a minimum above the quota's hard limit is refused at once and holds nothing back",
		snap: func() snapshot.Snapshot {
			s := clusterOf(ns, nil)
			withQuota(&s, "team-a", 10, 10, -1, 0)
			return s
		},
		queue:    []QueuedJob{big, small},
		admitted: []string{"team-a/small"},
		kinds:    map[string]string{"team-a/big": v1.ReasonExceedsQuota},
		reason:   map[string]string{"team-a/big": "needs 14 CPU of namespace team-a's quota requests.cpu, above its hard limit of 10 CPU: it cannot start until the quota is raised"},
	}, {
		name: "a minimum the API server would refuse waits, naming the role and why, and holds nothing back",
		snap: func() snapshot.Snapshot {
			s := clusterOf(ns, nil)
			withQuota(&s, "team-a", 4, 20, -1, 0)
			return s
		},
		queue: func() []QueuedJob {
			refusedBig := big
			refusedBig.Pods = append([]PodSet(nil), big.Pods...)
			refusedBig.Pods[0].Refused = "ResourceQuota q tracks limits.cpu, which container pserver does not state: the API server refuses the pod"
			return []QueuedJob{refusedBig, small}
		}(),
		admitted: []string{"team-a/small"},
		kinds:    map[string]string{"team-a/big": v1.ReasonWillBeRefused},
		reason: map[string]string{"team-a/big": "position 1 of 1 in the queue: the API server would refuse its " + big.Pods[0].Role +
			" pods: ResourceQuota q tracks limits.cpu, which container pserver does not state: the API server refuses the pod"},
	}, {
		name: "a scoped quota below the minimum's hard limit holds nothing back",
		snap: func() snapshot.Snapshot { return clusterOf(ns, nil) },
		queue: func() []QueuedJob {
			scoped := big
			scoped.UncountedQuota, scoped.UncountedQuotaHard = "its minimum needs 14 of ResourceQuota high's requests.cpu, above its hard limit of 10", true
			return []QueuedJob{scoped, small}
		}(),
		admitted: []string{"team-a/small"},
		kinds:    map[string]string{"team-a/big": v1.ReasonExceedsQuota},
		reason:   map[string]string{"team-a/big": "position 1 of 1 in the queue: its minimum needs 14 of ResourceQuota high's requests.cpu, above its hard limit of 10"},
	}, {
		name: "a scoped quota with too little room now keeps the job waiting for quota",
		snap: func() snapshot.Snapshot { return clusterOf(ns, nil) },
		queue: func() []QueuedJob {
			scoped := big
			scoped.UncountedQuota = "ResourceQuota high's requests.cpu: 6 left, the minimum needs 14"
			return []QueuedJob{scoped}
		}(),
		kinds:  map[string]string{"team-a/big": v1.ReasonWaitingForQuota},
		reason: map[string]string{"team-a/big": "position 1 of 1 in the queue: ResourceQuota high's requests.cpu: 6 left, the minimum needs 14"},
	}, {
		name: "pods count against the quota too",
		snap: func() snapshot.Snapshot {
			s := clusterOf(ns, nil)
			withQuota(&s, "team-a", -1, 0, 2, 10)
			return s
		},
		queue:  []QueuedJob{small},
		kinds:  map[string]string{"team-a/small": v1.ReasonWaitingForQuota},
		reason: map[string]string{"team-a/small": "namespace team-a quota pods: 2 left, the minimum needs 3"},
	}, {
		name: "the first waiting job of a namespace holds its share of the quota; other namespaces go on",
		snap: func() snapshot.Snapshot {
			s := clusterOf(ns, nil)
			withQuota(&s, "team-a", 12, 20, -1, 0)
			return s
		},
		queue:    []QueuedJob{big, small, other},
		admitted: []string{"team-b/small"},
		kinds:    map[string]string{"team-a/big": v1.ReasonWaitingForQuota, "team-a/small": v1.ReasonWaitingForQuota},
	}, {
		name: "what an admission takes from the quota is gone for the next job",
		snap: func() snapshot.Snapshot {
			s := clusterOf(ns, nil)
			withQuota(&s, "team-a", 5, 20, -1, 0)
			return s
		},
		queue:    []QueuedJob{small, queued("team-a/second", 3*time.Second)},
		admitted: []string{"team-a/small"},
		kinds:    map[string]string{"team-a/second": v1.ReasonWaitingForQuota},
		reason:   map[string]string{"team-a/second": "2 CPU left, the minimum needs 3 CPU"},
	}, {
		name: "the head's nodes are reserved: a small job behind it that fits there waits",
		snap: func() snapshot.Snapshot {
			// 10 CPU used on each node: 12 free, 6 on each; big needs 14.
			return clusterOf(ns, nil, otherPod{name: "x", node: "n-0", req: res(10, 1, 0)}, otherPod{name: "y", node: "n-1", req: res(10, 1, 0)})
		},
		queue:  []QueuedJob{big, small},
		kinds:  map[string]string{"team-a/big": v1.ReasonWaitingForAdmission, "team-a/small": v1.ReasonReservedForHead},
		reason: map[string]string{"team-a/small": "would fit, but only on nodes kept for team-a/big, ahead in the queue"},
	}, {
		name: "a job behind the head is admitted onto a node the head may not use",
		snap: func() snapshot.Snapshot {
			pool := append(nodes("n", 2, res(16, 64, 0)), nodeSpec{name: "gpu-0", alloc: res(16, 64, 4),
				taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}})
			return clusterOf(pool, nil, otherPod{name: "x", node: "n-0", req: res(10, 1, 0)}, otherPod{name: "y", node: "n-1", req: res(10, 1, 0)})
		},
		queue: []QueuedJob{big, queued("team-a/gpu", time.Second, placedAt(snapshot.PlacementOf(&corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}})))},
		admitted: []string{"team-a/gpu"},
		kinds:    map[string]string{"team-a/big": v1.ReasonWaitingForAdmission},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideQueue(t, tc.snap(), nil, Queue{Jobs: tc.queue}, Options{Now: t0})
			assert.ElementsMatch(t, tc.admitted, admittedKeys(d))
			for k, kind := range tc.kinds {
				assert.Equal(t, kind, kindOf(d, k), k)
			}
			for k, r := range tc.reason {
				assert.Contains(t, reasonOf(d, k), r, k)
			}
		})
	}
}

func TestDecideGrowthLeavesTheQueuesQuota(t *testing.T) {
	// The elastic job of team-a could grow into the whole quota; the job
	// queued in team-a waits for nodes (held by x) and holds its 3 CPU.
	ns := nodes("n", 1, res(8, 64, 0))
	e := newJob("team-a/e", withRange(1, 10), runningOn("n-0"))
	snap := clusterOf(ns, []Job{e}, otherPod{name: "x", node: "n-0", req: res(6, 1, 0)})
	withQuota(&snap, "team-a", 5, 10, -1, 0)
	q := queued("team-a/q", 0)
	d := decideQueue(t, snap, []Job{e}, Queue{Jobs: []QueuedJob{q}}, Options{Now: t0, MaxLoadDesired: 1})
	require.Empty(t, d.Admitted)
	assert.Equal(t, int32(2), toOf(d.Actions, e), "1 CPU idle, and 2 of the 5 CPU of quota not held for the queue")

	snap = clusterOf(ns, []Job{e}, otherPod{name: "x", node: "n-0", req: res(6, 1, 0)})
	withQuota(&snap, "team-a", 5, 10, -1, 0)
	d = decideQueue(t, snap, []Job{e}, Queue{}, Options{Now: t0, MaxLoadDesired: 1})
	assert.Equal(t, int32(2), toOf(d.Actions, e), "without a queue the node's 1 idle CPU is the bound")
}

func TestDecidePreemption(t *testing.T) {
	// Two 8-CPU nodes, full: a (priority 0, oldest) and b (priority 0,
	// newer) hold 4 CPU each on n-0, c (priority 10) all of n-1. high
	// (priority 100) needs one 8-CPU pod.
	ns := nodes("n", 2, res(8, 64, 0))
	pods := map[string]otherPod{
		"ns/a": {name: "a-ps", node: "n-0", req: res(4, 1, 0)},
		"ns/b": {name: "b-ps", node: "n-0", req: res(4, 1, 0)},
		"ns/c": {name: "c-ps", node: "n-1", req: res(8, 1, 0)},
	}
	build := func() snapshot.Snapshot {
		snap := clusterOf(ns, nil, pods["ns/a"], pods["ns/b"], pods["ns/c"])
		for k, p := range pods {
			runningWhole(&snap, k, p)
		}
		return snap
	}
	running := []RunningJob{{Key: "ns/a", Priority: 0, Created: t0}, {Key: "ns/b", Priority: 0, Created: t0.Add(time.Minute)},
		{Key: "ns/c", Priority: 10, Created: t0}}
	high := queued("ns/high", 0, queuedPriority(100), gang(false, 0, res(1, 1, 0), 1, res(8, 1, 0)))
	opts := Options{Now: t0, Preemption: true}

	t.Run("the lowest priority first, and no more jobs than needed", func(t *testing.T) {
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, opts)
		assert.Equal(t, []string{"ns/high"}, admittedKeys(d))
		require.Len(t, d.Preempted, 2)
		assert.Equal(t, "ns/b", d.Preempted[0].Job, "newest first")
		assert.Equal(t, "ns/a", d.Preempted[1].Job)
		assert.Equal(t, "ns/high", d.Preempted[0].By)
		assert.Contains(t, d.Admitted[0].Reason, "fits once 2 running jobs of a lower priority (ns/b, ns/a) are stopped whole")
	})
	t.Run("one job is enough when one is", func(t *testing.T) {
		small := queued("ns/high", 0, queuedPriority(100), gang(false, 0, res(1, 1, 0), 1, res(4, 1, 0)))
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{small}, Running: running}, opts)
		require.Len(t, d.Preempted, 1)
		assert.Equal(t, "ns/b", d.Preempted[0].Job)
	})
	t.Run("never a job of the same or a higher priority", func(t *testing.T) {
		same := queued("ns/high", 0, queuedPriority(0), gang(false, 0, res(1, 1, 0), 1, res(8, 1, 0)))
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{same}, Running: running}, opts)
		assert.Empty(t, d.Preempted)
		assert.Empty(t, d.Admitted)
	})
	t.Run("only when the minimum rule cannot make room", func(t *testing.T) {
		low := newJob("ns/low", withRange(1, 8), spread(8, ns[1:]))
		snap := clusterOf(ns, []Job{low}, pods["ns/a"], pods["ns/b"])
		runningWhole(&snap, "ns/a", pods["ns/a"])
		runningWhole(&snap, "ns/b", pods["ns/b"])
		six := queued("ns/high", 0, queuedPriority(100), gang(false, 0, res(1, 1, 0), 1, res(6, 1, 0)))
		d := decideQueue(t, snap, []Job{low}, Queue{Jobs: []QueuedJob{six}, Running: append(running[:2:2], RunningJob{Key: "ns/low", Created: t0})}, opts)
		assert.Empty(t, d.Preempted, "trainers above low's minimum make room")
		assert.Equal(t, []string{"ns/high"}, admittedKeys(d))
		assert.Equal(t, int32(2), toOf(d.Actions, low), "low gives 6 of the 7 trainers above its minimum")

		d = decideQueue(t, snap, []Job{low}, Queue{Jobs: []QueuedJob{high}, Running: append(running[:2:2], RunningJob{Key: "ns/low", Created: t0})}, opts)
		assert.Len(t, d.Preempted, 2, "8 CPU: low's 7 above its minimum are not enough; a and b are stopped instead")
		assert.Equal(t, int32(8), toOf(d.Actions, low), "low keeps its trainers")
	})
	t.Run("a running job whose pods the snapshot does not hold yet: no one is stopped in its place", func(t *testing.T) {
		seen := []RunningJob{{Key: "ns/a", Priority: 0, Created: t0, MinPods: 1}, {Key: "ns/b", Priority: 0, Created: t0.Add(time.Minute), MinPods: 1},
			{Key: "ns/c", Priority: 10, Created: t0, MinPods: 1}}
		small := queued("ns/high", 0, queuedPriority(100), gang(false, 0, res(1, 1, 0), 1, res(4, 1, 0)))
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{small}, Running: seen}, opts)
		require.Len(t, d.Preempted, 1, "every job's minimum in the snapshot")
		assert.Equal(t, "ns/b", d.Preempted[0].Job)

		late := append(seen[:3:3], RunningJob{Key: "ns/d", Priority: 0, Created: t0.Add(time.Hour), MinPods: 2})
		d = decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{small}, Running: late}, opts)
		assert.Empty(t, d.Preempted, "d, the newest, Running and none of its pods seen: b is not stopped in its place")
		assert.Empty(t, d.Admitted)

		snap := build()
		runningWhole(&snap, "ns/d", otherPod{name: "d-ps", node: "n-0", req: res(1, 1, 0)})
		d = decideQueue(t, snap, nil, Queue{Jobs: []QueuedJob{small}, Running: late}, opts)
		assert.Empty(t, d.Preempted, "one of d's two pods seen")

		cordoned := build()
		runningWhole(&cordoned, "ns/d", otherPod{name: "d-ps", node: "cordoned-0", req: res(1, 1, 0)},
			otherPod{name: "d-tr", node: "cordoned-0", req: res(1, 1, 0)})
		d = decideQueue(t, cordoned, nil, Queue{Jobs: []QueuedJob{small}, Running: late}, opts)
		require.Len(t, d.Preempted, 1, "d's pods seen, bound to a node that does not count (cordoned, NotReady)")
		assert.Equal(t, "ns/b", d.Preempted[0].Job, "d holds no room a pod could use: b frees it")

		late[3].MinPods = 0 // not Running yet: its pods may still be pending
		d = decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{small}, Running: late}, opts)
		require.Len(t, d.Preempted, 1)
		assert.Equal(t, "ns/b", d.Preempted[0].Job, "a job holding nothing frees nothing")
	})
	t.Run("off, the job waits", func(t *testing.T) {
		d := decideQueue(t, build(), nil, Queue{Jobs: []QueuedJob{high}, Running: running}, Options{Now: t0})
		assert.Empty(t, d.Preempted)
		assert.Equal(t, v1.ReasonWaitingForAdmission, kindOf(d, "ns/high"))
	})
	t.Run("an elastic job stopped whole is explained and not scaled", func(t *testing.T) {
		e := newJob("ns/e", withRange(2, 2), withPriority(0), spread(2, ns[1:]), withRequest(res(4, 1, 0)))
		snap := clusterOf(ns, []Job{e}, pods["ns/a"], pods["ns/b"])
		runningWhole(&snap, "ns/a", pods["ns/a"])
		runningWhole(&snap, "ns/b", pods["ns/b"])
		run := []RunningJob{running[0], running[1], {Key: "ns/e", Created: t0.Add(time.Hour)}}
		d := decideQueue(t, snap, []Job{e}, Queue{Jobs: []QueuedJob{high}, Running: run}, opts)
		require.Len(t, d.Preempted, 1)
		assert.Equal(t, "ns/e", d.Preempted[0].Job, "the newest of priority 0 frees a whole node")
		assert.Empty(t, d.Actions)
	})
}

func TestDecideKeepsTheRoomOfAnAdmittedJobWhosePodsDoNotExistYet(t *testing.T) {
	// started was admitted by the last plan: its 3 CPU are free in the
	// snapshot until its pods are created. next needs them too.
	ns := nodes("n", 1, res(4, 64, 0))
	started := queued("team-a/started", 0)
	next := queued("team-a/next", time.Second)
	snap := clusterOf(ns, nil)
	withQuota(&snap, "team-a", 5, 10, -1, 0)
	d := decideQueue(t, snap, nil, Queue{Jobs: []QueuedJob{next}, Starting: []QueuedJob{started}}, Options{Now: t0})
	assert.Empty(t, d.Admitted, "the room is the admitted job's")
	assert.Equal(t, v1.ReasonWaitingForQuota, kindOf(d, "team-a/next"), "and so is the quota its pods will take")

	d = decideQueue(t, clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{next}, Starting: []QueuedJob{started}}, Options{Now: t0})
	assert.Empty(t, d.Admitted)
	assert.Contains(t, reasonOf(d, "team-a/next"), "at most 1 CPU")

	d = decideQueue(t, clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{next}}, Options{Now: t0})
	assert.Equal(t, []string{"team-a/next"}, admittedKeys(d), "once its pods exist, they are the snapshot's")
}
