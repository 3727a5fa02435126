package planner

import (
	"time"
)

// planCase is one row of the planner's table: a cluster, its jobs, and the
// replicas and reasons the plan must give.
type planCase struct {
	name   string
	nodes  []nodeSpec
	jobs   []Job
	others []otherPod
	opts   Options
	// want maps job keys to their replicas after the plan; jobs not listed
	// must keep Current.
	want map[string]int32
	// reasons maps job keys to substrings their action's reason must hold.
	reasons map[string][]string
}

func planCases() []planCase {
	n4x8 := nodes("n", 4, res(8, 64, 0))
	twoFull := nodes("n", 2, res(8, 64, 0))
	gpuNodes := nodes("g", 2, res(64, 512, 4))
	return []planCase{
		{
			name:    "growth limited by CPU load",
			nodes:   n4x8,
			jobs:    []Job{newJob("a", withRange(1, 100), runningOn("n-0"))},
			want:    map[string]int32{"a": 31}, // 31 CPU ≤ 0.97 × 32 < 32
			reasons: map[string][]string{"a": {"scale up by 30", "31 CPU, 261120 MiB memory, 0 GPU idle on 4 nodes", "fulfillment 0 (1 of 1..100 trainers placed) was the lowest"}},
		},
		{
			name:  "growth limited by memory load",
			nodes: nodes("n", 4, res(64, 8, 0)),
			jobs:  []Job{newJob("a", withRange(1, 100), withRequest(res(0.5, 2, 0)), runningOn("n-0"))},
			want:  map[string]int32{"a": 15}, // 15 × 2 GiB ≤ 0.97 × 32 GiB < 16 × 2 GiB
		},
		{
			name:  "growth limited by GPU load",
			nodes: gpuNodes,
			jobs:  []Job{newJob("a", withRange(1, 100), withRequest(res(1, 1, 1)), runningOn("g-0"))},
			want:  map[string]int32{"a": 7}, // 7 ≤ 0.97 × 8 < 8
		},
		{
			name:  "a CPU-only job is not held back by GPU load",
			nodes: gpuNodes,
			jobs: []Job{
				newJob("gpu", withRange(8, 8), withRequest(res(1, 1, 1)), runningOn("g-0", "g-0", "g-0", "g-0", "g-1", "g-1", "g-1", "g-1")),
				newJob("cpu", withRange(1, 3), runningOn("g-0")),
			},
			want: map[string]int32{"cpu": 3},
		},
		{
			name:  "growth limited by per-node fit: 12 CPU idle in total, 3 per node, trainer needs 4",
			nodes: append(nodes("n", 4, res(4, 16, 0)), nodeSpec{name: "big", alloc: res(4, 16, 0)}),
			jobs:  []Job{newJob("a", withRange(1, 10), withRequest(res(4, 1, 0)), runningOn("big"))},
			others: []otherPod{
				{name: "o0", node: "n-0", req: res(1, 1, 0)}, {name: "o1", node: "n-1", req: res(1, 1, 0)},
				{name: "o2", node: "n-2", req: res(1, 1, 0)}, {name: "o3", node: "n-3", req: res(1, 1, 0)},
			},
			want: map[string]int32{},
		},
		{
			name:  "growth stops at max",
			nodes: n4x8,
			jobs:  []Job{newJob("a", withRange(1, 3), runningOn("n-0"))},
			want:  map[string]int32{"a": 3},
		},
		{
			name:  "a job at max is not grown",
			nodes: n4x8,
			jobs:  []Job{newJob("a", withRange(1, 3), runningOn("n-0", "n-1", "n-2"))},
			want:  map[string]int32{},
		},
		{
			name:  "over max_load_desired trainers are given back until under it",
			nodes: nodes("n", 1, res(10, 100, 0)),
			jobs:  []Job{newJob("a", withRange(2, 10), spread(8, nodes("n", 1, res(10, 100, 0))))},
			// 8 trainers + a bound 3-CPU pod = 11 > 9.7.
			others:  []otherPod{{name: "o", node: "n-0", req: res(3, 1, 0)}},
			want:    map[string]int32{"a": 6},
			reasons: map[string][]string{"a": {"scale down by 2: CPU load 1.1 above max_load_desired 0.97"}},
		},
		{
			name:    "load yield never goes below min",
			nodes:   nodes("n", 1, res(10, 100, 0)),
			jobs:    []Job{newJob("a", withRange(7, 10), spread(8, nodes("n", 1, res(10, 100, 0))))},
			others:  []otherPod{{name: "o", node: "n-0", req: res(3, 1, 0)}},
			want:    map[string]int32{"a": 7},
			reasons: map[string][]string{"a": {"scale down by 1: CPU load 1.1 above"}},
		},
		{
			name:  "a custom max_load_desired",
			nodes: n4x8,
			opts:  Options{MaxLoadDesired: 0.5},
			jobs:  []Job{newJob("a", withRange(1, 100), runningOn("n-0"))},
			want:  map[string]int32{"a": 16},
		},
		{
			name:  "trainers kube-scheduler preempted for a pod of a higher priority are given back",
			nodes: twoFull,
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{newJob("low", withRange(1, 16), withRequest(res(4, 1, 0)), runningOn("n-0", "n-1", "n-1"),
				unschedulableTrainers(1))},
			// The preempted trainer is going; its replacement finds its room
			// taken by the pod the scheduler nominated there.
			others: []otherPod{
				{name: "preempted", node: "n-0", req: res(4, 1, 0), terminating: true, deadline: t0.Add(time.Hour)},
				{name: "web", priority: 1000, req: res(4, 1, 0), nominated: "n-0"},
			},
			want: map[string]int32{"low": 3},
			reasons: map[string][]string{"low": {
				"scale down by 1 (1 not yet scheduled): 1 trainer of the job cannot be scheduled",
				"1 pod of priority 1000 hold or wait for the room (kube-scheduler preempts trainers for them)",
			}},
		},
		{
			name:   "no yield for a pod the scheduler is already preempting for",
			nodes:  twoFull,
			opts:   Options{MaxLoadDesired: 2}, // isolate the priority rule
			jobs:   []Job{newJob("low", withRange(1, 16), withRequest(res(4, 1, 0)), spread(4, twoFull))},
			others: []otherPod{{name: "nominated", priority: 1000, req: res(4, 1, 0), nominated: "n-0"}},
			want:   map[string]int32{},
		},
		{
			name:  "pods of a lower priority neither shrink a job nor hold back its growth",
			nodes: nodes("n", 3, res(8, 64, 0)),
			jobs:  []Job{newJob("a", withRange(1, 10), withRequest(res(2, 1, 0)), spread(4, nodes("n", 1, res(8, 64, 0))))},
			others: append([]otherPod{{name: "o1", node: "n-1", req: res(4, 1, 0)}, {name: "o2", node: "n-2", req: res(4, 1, 0)}},
				pendingPods(1, -5, res(6, 1, 0))...),
			// 16 of 24 CPU bound; the 6-CPU pod of priority -5 fits nowhere
			// and is no load: a grows to 23 of 24 CPU.
			want: map[string]int32{"a": 7},
		},
		{
			name:  "no yield from jobs of equal or higher priority",
			nodes: twoFull,
			opts:  Options{MaxLoadDesired: 2}, // isolate the priority rule
			jobs: []Job{
				newJob("same", withRange(1, 10), withPriority(1000), withRequest(res(4, 1, 0)), spread(2, twoFull[:1])),
				newJob("higher", withRange(1, 10), withPriority(1001), withRequest(res(4, 1, 0)), spread(2, twoFull[1:])),
			},
			others: pendingPods(1, 1000, res(4, 1, 0)),
			want:   map[string]int32{},
		},
		{
			name:  "a pod no yield can fit costs nothing",
			nodes: twoFull,
			jobs:  []Job{newJob("low", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull))},
			opts:  Options{MaxLoadDesired: 1},
			// Needs 9 CPU; no node has more than 8. It is no load either:
			// pending pods are not (the original counted them, so one such
			// pod shrank every job to its minimum).
			others: pendingPods(1, 1000, res(9, 1, 0)),
			want:   map[string]int32{},
		},
		{
			name:  "fairness: equal jobs share spare capacity",
			nodes: nodes("n", 1, res(17, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("c", withRange(1, 20), runningOn("n-0")),
				newJob("a", withRange(1, 20), runningOn("n-0")),
				newJob("b", withRange(1, 20), runningOn("n-0")),
			},
			want: map[string]int32{"a": 6, "b": 6, "c": 5},
		},
		{
			name:  "fairness across ranges: growth levels fulfillment, not counts",
			nodes: nodes("n", 1, res(14, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("small", withRange(2, 4), runningOn("n-0", "n-0")),
				newJob("big", withRange(2, 14), runningOn("n-0", "n-0")),
			},
			// 10 spare: small reaches 4 (f=1) while big reaches 10 (f=0.67):
			// small's steps are 1/2, big's 1/12.
			want: map[string]int32{"small": 4, "big": 10},
		},
		{
			name:  "ties go to the higher priority",
			nodes: nodes("n", 1, res(3, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("a", withRange(1, 20), runningOn("n-0")),
				newJob("b", withRange(1, 20), withPriority(10), runningOn("n-0")),
			},
			want: map[string]int32{"b": 2},
		},
		{
			// The job scaled down a minute ago is not grown, and it keeps its
			// place: the others grow only up to its fulfillment, so that it
			// is not left behind for good when its cool-down ends.
			name:  "cool-down holds a recently scaled-down job's place",
			nodes: n4x8,
			opts:  Options{Now: t0.Add(time.Minute), CoolDown: 5 * time.Minute},
			jobs: []Job{
				newJob("recent", withRange(1, 3), runningOn("n-0"), scaledDownAt(t0)),
				newJob("old", withRange(1, 3), runningOn("n-0"), scaledDownAt(t0.Add(-10*time.Minute))),
				newJob("never", withRange(1, 3), runningOn("n-0")),
			},
			want: map[string]int32{"old": 2, "never": 2},
		},
		{
			name:  "a job cooling down holds back only its priority and lower",
			nodes: n4x8,
			opts:  Options{Now: t0.Add(time.Minute), CoolDown: 5 * time.Minute},
			jobs: []Job{
				newJob("recent", withRange(1, 3), runningOn("n-0"), scaledDownAt(t0)),
				newJob("high", withRange(1, 3), runningOn("n-0"), withPriority(100)),
				newJob("low", withRange(1, 3), runningOn("n-0"), withPriority(-5)),
			},
			want: map[string]int32{"high": 3},
		},
		{
			name:  "MaxGrowPerCycle caps each job's growth",
			nodes: n4x8,
			opts:  Options{MaxGrowPerCycle: 2},
			jobs:  []Job{newJob("a", withRange(1, 20), runningOn("n-0")), newJob("b", withRange(1, 20), runningOn("n-0"))},
			want:  map[string]int32{"a": 3, "b": 3},
		},
		{
			name:  "min == max is never moved, even over the threshold",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs:  []Job{newJob("fixed", withRange(4, 4), runningOn("n-0", "n-0", "n-0", "n-0"))},
			others: append(pendingPods(1, 0, res(2, 1, 0)),
				pendingPods(1, 1000, res(2, 1, 0))...),
			want: map[string]int32{},
		},
		{
			name:  "Current outside [Min, Max] is left to the controller",
			nodes: n4x8,
			jobs: []Job{
				newJob("above", withRange(1, 2), runningOn("n-0", "n-0", "n-0")),
				newJob("below", withRange(3, 5), runningOn("n-0")),
			},
			want: map[string]int32{},
		},
		{
			name:  "a job whose own trainers are unschedulable gets no more",
			nodes: n4x8,
			jobs: []Job{
				newJob("stuck", withRange(1, 10), withRequest(res(1, 1, 0)), runningOn("n-0"), unschedulableTrainers(1)),
				newJob("ok", withRange(1, 3), runningOn("n-0")),
			},
			want: map[string]int32{"ok": 3},
		},
		{
			name:  "a job with zero trainer pods is not all pending (as the original counted it): its replicas are reserved, then it grows",
			nodes: nodes("n", 1, res(5, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("new", withRange(2, 10), withCurrent(2))},
			want:  map[string]int32{"new": 5},
			reasons: map[string][]string{"new": {
				"scale up by 3: 3 CPU, 63488 MiB memory, 0 GPU idle on 1 node; fulfillment 0 (2 of 2..10 trainers placed)",
			}},
		},
		{
			name:  "replicas not created yet are no load: one keeps the room it fits in, the other waits for the scheduler",
			nodes: nodes("n", 1, res(2, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("starved", withRange(1, 10), withCurrent(3), withRequest(res(1, 1, 0)), runningOn("n-0")),
				newJob("other", withRange(1, 10), withRequest(res(1, 1, 0)), runningOn("n-0")),
			},
			want: map[string]int32{},
		},
		{
			name:  "room a yield frees is not regrown in the same plan",
			nodes: twoFull,
			jobs: []Job{
				newJob("low", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
				newJob("other", withRange(0, 10), withPriority(500), withCurrent(0), withRequest(res(1, 1, 0))),
			},
			others: pendingPods(1, 1000, res(1, 1, 0)),
			// The freed trainer leaves 3 CPU on a node, but that pod is still
			// terminating; "other" must wait for the next cycle.
			want: map[string]int32{"low": 3},
		},
		{
			name:  "a pending high-priority pod that fits keeps its room from growth",
			nodes: nodes("n", 1, res(4, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs:  []Job{newJob("a", withRange(1, 10), runningOn("n-0"))},
			// The scheduler has not retried the pod yet; the planner leaves
			// it its 2 CPU and grows a into the last one.
			others: pendingPods(1, 1000, res(2, 1, 0)),
			want:   map[string]int32{"a": 2},
		},
		{
			name:  "pending trainers of a job go before running ones when over the threshold",
			nodes: nodes("n", 1, res(10, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("pending", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0", "n-0"), unschedulableTrainers(2)),
				newJob("running", withRange(1, 10), withPriority(-1), runningOn("n-0", "n-0", "n-0", "n-0", "n-0")),
			},
			// 10 CPU bound of 10, and the two unschedulable trainers fit
			// nowhere: they are given up, which stops nothing that runs.
			want:    map[string]int32{"pending": 5},
			reasons: map[string][]string{"pending": {"scale down by 2 (2 not yet scheduled): 2 trainers of the job cannot be scheduled"}},
		},
		{
			name:  "exactly at the threshold nothing moves: grow and shrink share one test",
			nodes: nodes("n", 1, res(100, 1000, 0)),
			// 97 CPU requested of 100: a 98th would exceed 0.97, and 97 does
			// not exceed it.
			jobs: []Job{newJob("a", withRange(1, 200), spread(97, nodes("n", 1, res(100, 1000, 0))))},
			want: map[string]int32{},
		},
		{
			name:  "lower priorities yield for a higher-priority job's trainers up to its min",
			nodes: twoFull,
			jobs: []Job{
				newJob("low", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
				newJob("high", withRange(1, 10), withPriority(1000), withRequest(res(4, 1, 0)), unschedulableTrainers(2)),
			},
			opts: Options{MaxLoadDesired: 2}, // isolate the priority rule
			// high's first trainer is its right (min 1); its second is
			// opportunistic: nobody yields for it, and as no node has room
			// for it, high gives it up.
			want: map[string]int32{"low": 3, "high": 1},
			reasons: map[string][]string{
				"low":  {"1 unschedulable pod of priority 1000 needs 4 CPU"},
				"high": {"1 trainer of the job cannot be scheduled and no node it may use has room for one"},
			},
		},
		{
			name:  "a job that cannot start takes trainers above min from a job of its priority",
			nodes: twoFull,
			jobs: []Job{
				// rich runs 4 of 1..10, two per node: no room anywhere.
				newJob("rich", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
			},
			// new (not Running, so not planned) waits for its pserver and
			// its one trainer: 3 + 4 CPU.
			others: []otherPod{
				{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(3, 1, 0)},
				{name: "new-trainer-0", job: "ns/new", req: res(4, 1, 0)},
			},
			opts: Options{MaxLoadDesired: 2}, // isolate the rule from load
			want: map[string]int32{"rich": 2},
			reasons: map[string][]string{"rich": {
				"scale down by 2: 2 unschedulable pods of 1 job below their minimum need 7 CPU",
				"trainers above this job's minimum make room on 2 nodes (all of priority 0)",
			}},
		},
		{
			name:  "the most fulfilled job of the priority gives back for a job below its minimum",
			nodes: nodes("n", 3, res(8, 64, 0)),
			jobs: []Job{
				newJob("poor", withRange(1, 10), withRequest(res(4, 1, 0)), runningOn("n-0", "n-0")),
				newJob("rich", withRange(1, 4), withRequest(res(4, 1, 0)), runningOn("n-1", "n-1", "n-2", "n-2")),
			},
			others: []otherPod{{name: "new-trainer-0", job: "ns/new", req: res(4, 1, 0)}},
			opts:   Options{MaxLoadDesired: 2},
			want:   map[string]int32{"rich": 3},
		},
		{
			// short runs 1 replica of its minimum of 2, and has two
			// unschedulable trainers: the ReplicaSet controller deletes one.
			// Only the one it keeps claims room; counting both took two of
			// rich's trainers, or made the load rule trim for room that
			// would never be used (FuzzPlan corpus entry 4e5ba0895a0b8af9).
			name:  "a trainer the ReplicaSet is deleting claims no room for its job's minimum",
			nodes: twoFull,
			jobs: []Job{
				newJob("rich", withRange(1, 4), withRequest(res(4, 1, 0)), spread(4, twoFull)),
				newJob("short", withRange(2, 4), withCurrent(1), withRequest(res(4, 1, 0)), unschedulableTrainers(2)),
			},
			opts: Options{MaxLoadDesired: 2},
			want: map[string]int32{"rich": 3},
		},
		{
			name:  "nobody gives back below min for a job that cannot start",
			nodes: twoFull,
			jobs: []Job{
				newJob("full", withRange(4, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
			},
			others: []otherPod{{name: "new-trainer-0", job: "ns/new", req: res(4, 1, 0)}},
			opts:   Options{MaxLoadDesired: 2},
			want:   map[string]int32{},
		},
		{
			name:  "a job of a lower priority does not take from a higher one to start",
			nodes: twoFull,
			jobs: []Job{
				newJob("high", withRange(1, 10), withPriority(1000), withRequest(res(4, 1, 0)), spread(4, twoFull)),
			},
			others: []otherPod{{name: "new-trainer-0", job: "ns/new", priority: 0, req: res(4, 1, 0)}},
			opts:   Options{MaxLoadDesired: 2},
			want:   map[string]int32{},
		},
		{
			name:  "plain pods of the same priority are not a job's minimum: nobody yields",
			nodes: twoFull,
			jobs: []Job{
				newJob("rich", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
			},
			others: pendingPods(2, 0, res(4, 1, 0)),
			opts:   Options{MaxLoadDesired: 2},
			want:   map[string]int32{},
		},
		{
			name:  "a planned job's pserver does not take its own job's trainers",
			nodes: twoFull,
			jobs: []Job{
				newJob("self", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
			},
			others: []otherPod{{name: "self-pserver-0", job: "self", notTrainer: true, req: res(4, 1, 0)}},
			opts:   Options{MaxLoadDesired: 2},
			want:   map[string]int32{},
		},
		{
			name:  "a planned job's trainers beyond its min take nothing from its equals",
			nodes: twoFull,
			jobs: []Job{
				newJob("rich", withRange(1, 10), withRequest(res(4, 1, 0)), spread(4, twoFull)),
				// No trainer placed, min 1: its first unschedulable trainer
				// is its right, the second is opportunistic.
				newJob("starved", withRange(1, 10), withRequest(res(4, 1, 0)), unschedulableTrainers(2)),
			},
			opts: Options{MaxLoadDesired: 2},
			// rich gives one trainer for starved's first; starved gives up
			// its second, which no node has room for.
			want: map[string]int32{"rich": 3, "starved": 1},
			reasons: map[string][]string{
				"rich":    {"1 unschedulable pod of 1 job below their minimum needs 4 CPU"},
				"starved": {"1 trainer of the job cannot be scheduled"},
			},
		},
		{
			name:  "duplicate keys and zero requests are accounted but never moved",
			nodes: n4x8,
			jobs: []Job{
				newJob("a", withRange(1, 3), runningOn("n-0")),
				newJob("a", withRange(1, 30), runningOn("n-1")),
				newJob("free", withRange(1, 3), withRequest(Resources{}), runningOn("n-0")),
			},
			want: map[string]int32{"a": 3},
		},
		{
			name:  "the lowest priority yields to load first, then the most fulfilled",
			nodes: nodes("n", 1, res(10, 64, 0)),
			opts:  Options{MaxLoadDesired: 1},
			jobs: []Job{
				newJob("lowprio", withRange(1, 10), withPriority(-1), runningOn("n-0", "n-0", "n-0")),
				newJob("rich", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0")),
				newJob("poor", withRange(1, 10), runningOn("n-0", "n-0", "n-0")),
			},
			// 14 CPU requested of 10: lowprio goes to its min (-2), rich to
			// poor's fulfillment (-1), then the tie goes by key (-1).
			others: []otherPod{{name: "o", node: "n-0", req: res(4, 1, 0)}},
			want:   map[string]int32{"lowprio": 1, "rich": 3, "poor": 2},
		},
	}
}
