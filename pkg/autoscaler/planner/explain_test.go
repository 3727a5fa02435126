package planner

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// explainCase is one row of the explanations' table: a cluster, its jobs,
// and the limit and message each job must get.
type explainCase struct {
	name   string
	nodes  []nodeSpec
	jobs   []Job
	others []otherPod
	opts   Options
	quotas map[string]snapshot.Quota
	// want maps job keys to their limit; messages to substrings their
	// message must hold.
	want     map[string]Limit
	messages map[string][]string
	check    func(t *testing.T, e map[string]Explanation)
}

func explainCases() []explainCase {
	n4x8 := nodes("n", 4, res(8, 64, 0))
	one := nodes("n", 1, res(8, 64, 0))
	now := t0.Add(time.Hour)
	return []explainCase{
		{
			name:     "at max",
			nodes:    n4x8,
			jobs:     []Job{newJob("a", withRange(1, 2), runningOn("n-0", "n-1"))},
			want:     map[string]Limit{"a": LimitAtMax},
			messages: map[string][]string{"a": {"at its maximum, 2 of 1..2 trainers"}},
		},
		{
			name:  "no gain: under goodput, a trainer that adds less than MinGain is not given",
			nodes: nodes("n", 2, res(4, 64, 0)),
			jobs: []Job{newJob("flat", withRange(1, 8), runningOn("n-0"), scalesBy("flat", 0)),
				newJob("scales", withRange(1, 8), runningOn("n-1"), scalesBy("scaling", 0))},
			opts: Options{Policy: PolicyGoodput},
			want: map[string]Limit{"flat": LimitNoGain, "scales": LimitGrowing},
			messages: map[string][]string{
				"flat":   {"a 2nd trainer would add 0.0", "below the 0.1× the goodput policy asks of a trainer"},
				"scales": {"grows by 5 to 6 of 1..8 trainers", "a 2nd trainer adds 0.9", "the most of priority 0; to flat, a 2nd trainer would add 0.0"},
			},
		},
		{
			name:  "no gain: under goodput, a resize that saves less than a restart costs",
			nodes: nodes("n", 2, res(4, 64, 0)),
			jobs: []Job{newJob("short", withRange(1, 8), runningOn("n-0"), scalesBy("scaling", 10*time.Second),
				restartsOnResize(time.Time{}, 30*time.Second))},
			opts:     Options{Policy: PolicyGoodput},
			want:     map[string]Limit{"short": LimitNoGain},
			messages: map[string][]string{"short": {"which would save 5s of the 10s it has left, less than a restart's 30s"}},
		},
		{
			name:  "no gain: under goodput, a job gives back a trainer that slows it",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs:  []Job{newJob("slower", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", 0))},
			opts:  Options{Policy: PolicyGoodput},
			want:  map[string]Limit{"slower": LimitNoGain},
			messages: map[string][]string{"slower": {"gives back 1 trainer, to 2 of 1..4", "a 3rd trainer adds -0.1",
				"the job runs faster without it"}},
		},
		{
			name:     "grown to max this cycle",
			nodes:    n4x8,
			jobs:     []Job{newJob("a", withRange(1, 3), runningOn("n-0"))},
			want:     map[string]Limit{"a": LimitAtMax},
			messages: map[string][]string{"a": {"grows by 2 to its maximum, 3 of 1..3 trainers"}},
		},
		{
			name:     "growing: a job grown this cycle is never no room, whatever stopped it",
			nodes:    nodes("n", 2, res(4, 64, 0)),
			jobs:     []Job{newJob("a", withRange(1, 20), withRequest(res(2, 1, 0)), runningOn("n-0"))},
			opts:     Options{MaxLoadDesired: 1},
			want:     map[string]Limit{"a": LimitGrowing},
			messages: map[string][]string{"a": {"grows by 3 to 4 of 1..20 trainers"}},
		},
		{
			name:   "no room: the largest hole is smaller than a trainer",
			nodes:  n4x8,
			jobs:   []Job{newJob("a", withRange(1, 10), withRequest(res(4, 1, 0)), runningOn("n-0"))},
			others: []otherPod{{name: "o0", node: "n-0", req: res(2, 1, 0)}, {name: "o1", node: "n-1", req: res(5, 1, 0)}, {name: "o2", node: "n-2", req: res(6, 1, 0)}, {name: "o3", node: "n-3", req: res(7, 1, 0)}},
			want:   map[string]Limit{"a": LimitNoRoom},
			messages: map[string][]string{"a": {
				"no node it may use has room for one more trainer (4 CPU, 1024 MiB memory, 0 GPU)",
				"the largest room on a node it may use is 3 CPU, 64512 MiB memory, 0 GPU (n-1)"}},
		},
		{
			name:     "no eligible node: trainers bigger than any node",
			nodes:    n4x8,
			jobs:     []Job{newJob("a", withRange(1, 10), withRequest(res(12, 1, 0)), runningOn("gone"))},
			want:     map[string]Limit{"a": LimitNoEligibleNode},
			messages: map[string][]string{"a": {"one trainer needs 12 CPU, 1024 MiB memory, 0 GPU, more than any node it may use: the largest, n-0, has 8 CPU, 65536 MiB memory, 0 GPU allocatable"}},
		},
		{
			name:     "no eligible node: no node in its pool",
			nodes:    n4x8,
			jobs:     []Job{newJob("a", withRange(1, 10), func(j *Job) { j.Placement = inPool("gpu") }, runningOn("gone"))},
			want:     map[string]Limit{"a": LimitNoEligibleNode},
			messages: map[string][]string{"a": {"no Ready, schedulable node matches where its trainers may run"}},
		},
		{
			name:  "load: one more trainer would pass max_load_desired",
			nodes: n4x8,
			jobs:  []Job{newJob("a", withRange(1, 10), runningOn("n-0", "n-1", "n-2", "n-3"))},
			others: []otherPod{{name: "o0", node: "n-0", req: res(7, 1, 0)}, {name: "o1", node: "n-1", req: res(7, 1, 0)},
				{name: "o2", node: "n-2", req: res(7, 1, 0)}, {name: "o3", node: "n-3", req: res(6, 1, 0)}},
			want:     map[string]Limit{"a": LimitLoad},
			messages: map[string][]string{"a": {"one more trainer (1 CPU) would take CPU requests past max_load_desired 0.97: 31 CPU of 32 CPU requested (load 0.969)"}},
			check: func(t *testing.T, e map[string]Explanation) {
				assert.Equal(t, "CPU", e["a"].Resource)
				assert.InDelta(t, 0.969, e["a"].Load, 0.001)
				assert.InDelta(t, 0.97, e["a"].Threshold, 1e-9)
			},
		},
		{
			name:     "load: shrunk for load",
			nodes:    one,
			jobs:     []Job{newJob("a", withRange(1, 10), runningOn("n-0", "n-0"))},
			others:   []otherPod{{name: "o0", node: "n-0", req: res(6.5, 1, 0)}},
			want:     map[string]Limit{"a": LimitLoad},
			messages: map[string][]string{"a": {"gives back 1 trainer, to 1 of 1..10: CPU load 1.063 was above max_load_desired 0.97"}},
		},
		{
			name:     "at min: held at its minimum while the load is over",
			nodes:    one,
			jobs:     []Job{newJob("a", withRange(1, 10), runningOn("n-0"))},
			others:   []otherPod{{name: "o0", node: "n-0", req: res(7.5, 1, 0)}},
			want:     map[string]Limit{"a": LimitAtMin},
			messages: map[string][]string{"a": {"held at its minimum of 1 trainers: CPU load 1.063 is above max_load_desired 0.97"}},
		},
		{
			// b fits on n-0 only, where a, less fulfilled, grows first; the
			// 3 CPU left on n-1 and n-2 are in pieces too small for b.
			name: "fair share: the idle room went to a less fulfilled job",
			nodes: []nodeSpec{{name: "n-0", alloc: res(8, 64, 0), labels: map[string]string{"pool": "p0"}},
				{name: "n-1", alloc: res(8, 64, 0)}, {name: "n-2", alloc: res(8, 64, 0)}},
			jobs: []Job{
				newJob("a", withRange(1, 10), func(j *Job) { j.Placement = inPool("p0") }, runningOn("n-0")),
				newJob("b", withRange(1, 3), withRequest(res(2, 1, 0)), runningOn("n-1", "n-2")),
			},
			others: []otherPod{{name: "o0", node: "n-0", req: res(5, 1, 0)}, {name: "o1", node: "n-1", req: res(4.5, 1, 0)},
				{name: "o2", node: "n-2", req: res(4.5, 1, 0)}},
			opts:     Options{MaxLoadDesired: 1},
			want:     map[string]Limit{"a": LimitGrowing, "b": LimitFairShare},
			messages: map[string][]string{"b": {"the idle room it could use went to jobs ahead of it in line", "the last to a (priority 0, fulfillment 0.222)"}},
		},
		{
			name:  "cool-down, and fair share behind a less fulfilled job cooling down",
			nodes: one,
			jobs: []Job{
				newJob("cool", withRange(1, 10), runningOn("n-0"), scaledDownAt(now.Add(-5*time.Second))),
				newJob("warm", withRange(1, 3), runningOn("n-0", "n-0")),
			},
			opts: Options{MaxLoadDesired: 1, Now: now, CoolDown: 15 * time.Second},
			want: map[string]Limit{"cool": LimitCoolDown, "warm": LimitFairShare},
			messages: map[string][]string{
				"cool": {"scaled down at 2026-01-02T04:04:00Z; not grown again before 2026-01-02T04:04:15Z (cool-down 15s)"},
				"warm": {"the room it could use is kept for cool (fulfillment 0), which is cooling down and grows first"},
			},
			check: func(t *testing.T, e map[string]Explanation) {
				assert.Equal(t, 10*time.Second, e["cool"].CoolDownLeft)
				assert.Equal(t, "cool", e["warm"].Other)
			},
		},
		{
			name:  "fair share: rebalancing, for the giver and the taker",
			nodes: full,
			jobs:  []Job{newJob("rich", spread(10, full)), newJob("poor", spread(1, full))},
			opts:  Options{MaxLoadDesired: 1},
			want:  map[string]Limit{"rich": LimitFairShare, "poor": LimitGrowing},
			messages: map[string][]string{
				"rich": {"gives back 4 trainers, to 6 of 1..10: its fulfillment 1 was more than 0.1 above the 0 of poor"},
				"poor": {"grows by 4 to 5 of 1..10 trainers into the room rich, more fulfilled (0.556), gives back by rebalancing"},
			},
		},
		{
			name:     "settling: a trainer waits for a node it fits on",
			nodes:    one,
			jobs:     []Job{newJob("a", withRange(1, 10), runningOn("n-0"), unschedulableTrainers(1))},
			want:     map[string]Limit{"a": LimitSettling},
			messages: map[string][]string{"a": {"1 trainer of its 2 of 1..10 trainers wait for a node"}},
		},
		{
			name:  "settling: the room is held by pods that are terminating",
			nodes: one,
			jobs:  []Job{newJob("a", withRange(1, 10), withRequest(res(2, 1, 0)), runningOn("n-0"))},
			others: []otherPod{{name: "going", node: "n-0", req: res(6, 1, 0), terminating: true,
				deadline: now.Add(time.Minute)}},
			opts:     Options{Now: now},
			want:     map[string]Limit{"a": LimitSettling},
			messages: map[string][]string{"a": {"still held by pods that are terminating"}},
		},
		{
			name:   "yielded to priority: stuck trainers give up the room a pod of a higher priority waits for",
			nodes:  one,
			jobs:   []Job{newJob("a", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0"), unschedulableTrainers(2))},
			others: []otherPod{{name: "web", priority: 1000, req: res(4, 1, 0), nominated: "n-0"}},
			// The nominated pod fills the node: at the default threshold the
			// load phase would take a running trainer too.
			opts:     Options{MaxLoadDesired: 1},
			want:     map[string]Limit{"a": LimitYieldedToPriority},
			messages: map[string][]string{"a": {"gives back 2 trainers, to 4 of 1..10 for 1 pod of priority up to 1000 (ns/web)"}},
			check: func(t *testing.T, e map[string]Explanation) {
				assert.Equal(t, []string{"ns/web"}, e["a"].Pods)
				assert.Equal(t, int32(1000), e["a"].PodPriority)
			},
		},
		{
			name:     "no room: stuck trainers given up when nothing outranks them",
			nodes:    one,
			jobs:     []Job{newJob("a", withRange(1, 10), withRequest(res(3, 1, 0)), runningOn("n-0", "n-0"), unschedulableTrainers(1))},
			others:   []otherPod{{name: "o", node: "n-0", req: res(1, 1, 0)}},
			opts:     Options{MaxLoadDesired: 1},
			want:     map[string]Limit{"a": LimitNoRoom},
			messages: map[string][]string{"a": {"gives back 1 trainer, to 2 of 1..10 that cannot be scheduled", "the largest room is 1 CPU"}},
		},
		{
			name:     "yielded to minimum: a new job of the same priority needs room",
			nodes:    one,
			jobs:     []Job{newJob("a", withRange(1, 10), spread(8, one))},
			others:   []otherPod{{name: "new-t0", job: "ns/new", req: res(2, 1, 0)}},
			opts:     Options{MaxLoadDesired: 1},
			want:     map[string]Limit{"a": LimitYieldedToMinimum},
			messages: map[string][]string{"a": {"gives back 2 trainers, to 6 of 1..10 for 1 pod of jobs of its priority below their minimum (ns/new-t0)"}},
		},
		{
			name:   "quota: the namespace's quota has no room for one more trainer",
			nodes:  n4x8,
			jobs:   []Job{newJob("ns/a", withRange(1, 10), withRequest(res(2, 1, 0)), runningOn("n-0"))},
			quotas: map[string]snapshot.Quota{"ns": quotaWith(func(q *snapshot.Quota) { q.Requests.CPUMilli = 1500 })},
			want:   map[string]Limit{"ns/a": LimitQuota},
			messages: map[string][]string{"ns/a": {
				"the ResourceQuota of namespace ns leaves requests.cpu 1.5 CPU, and one more trainer needs 2 CPU; at 1 of 1..10 trainers"}},
			check: func(t *testing.T, e map[string]Explanation) { assert.Equal(t, "requests.cpu", e["ns/a"].Resource) },
		},
		{
			name:     "quota on pods",
			nodes:    n4x8,
			jobs:     []Job{newJob("ns/a", withRange(1, 10), runningOn("n-0"))},
			quotas:   map[string]snapshot.Quota{"ns": quotaWith(func(q *snapshot.Quota) { q.Pods = 0 })},
			want:     map[string]Limit{"ns/a": LimitQuota},
			messages: map[string][]string{"ns/a": {"leaves pods 0 pods, and one more trainer needs 1 pod"}},
		},
		{
			name:  "not elastic: min == max, no request, replicas outside the range",
			nodes: n4x8,
			jobs: []Job{
				newJob("fixed", withRange(2, 2), runningOn("n-0", "n-0")),
				newJob("empty", withRequest(Resources{}), runningOn("n-0")),
				newJob("outside", withRange(2, 4), withCurrent(6)),
				newJob("negative", withCurrent(-3)),
			},
			want: map[string]Limit{"fixed": LimitNotElastic, "empty": LimitNotElastic, "outside": LimitNotElastic, "negative": LimitNotElastic},
			messages: map[string][]string{
				"fixed":    {"min-instance equals max-instance (2)"},
				"empty":    {"request no CPU, memory or GPU"},
				"outside":  {"asks for 6 replicas, outside 2..4"},
				"negative": {"asks for -3 replicas"},
			},
		},
		{
			name:     "dry run: a job the plan would scale",
			nodes:    n4x8,
			jobs:     []Job{newJob("a", withRange(1, 3), runningOn("n-0"))},
			opts:     Options{DryRun: true},
			want:     map[string]Limit{"a": LimitDryRun},
			messages: map[string][]string{"a": {"dry run: the plan would scale from 1 to 3 trainers (idle), and nothing is applied: scale up by 2"}},
		},
	}
}

func quotaWith(mut func(*snapshot.Quota)) snapshot.Quota {
	q := snapshot.NoQuota
	mut(&q)
	return q
}

func TestExplanations(t *testing.T) {
	for _, tc := range explainCases() {
		t.Run(tc.name, func(t *testing.T) {
			snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
			snap.Quotas = tc.quotas
			d := Decide(snap, tc.jobs, Queue{}, tc.opts)
			assert.Equal(t, Plan(snap, tc.jobs, tc.opts), d.Actions, "Decide's actions are Plan's")
			assertExplained(t, tc.jobs, tc.opts, d)
			byJob := map[string]Explanation{}
			for _, e := range d.Jobs {
				byJob[e.Job] = e
			}
			for key, want := range tc.want {
				assert.Equal(t, want, byJob[key].Limit, "job %s: %s", key, byJob[key].Message)
			}
			for key, subs := range tc.messages {
				for _, s := range subs {
					assert.Contains(t, byJob[key].Message, s, "job %s", key)
				}
			}
			if tc.check != nil {
				tc.check(t, byJob)
			}
			assert.Equal(t, d, Decide(snap, tc.jobs, Queue{}, tc.opts), "Decide is not deterministic")
		})
	}
}

// TestEveryLimitHasACase: the table covers the closed set.
func TestEveryLimitHasACase(t *testing.T) {
	seen := map[Limit]bool{}
	for _, tc := range explainCases() {
		for _, l := range tc.want {
			seen[l] = true
		}
	}
	for _, l := range Limits {
		if l == LimitNotRunning {
			continue // the callers', for jobs Plan does not see
		}
		assert.True(t, seen[l], "no table case explains a job by %s", l)
	}
}

var digit = regexp.MustCompile(`[0-9]`)

// assertExplained checks what every decision must satisfy: exactly one
// explanation per distinct job key, each from the closed set, with numbers,
// and agreeing with the actions.
func assertExplained(t *testing.T, jobs []Job, opts Options, d Decision) {
	t.Helper()
	keys := map[string]bool{}
	for _, j := range jobs {
		keys[j.Key] = true
	}
	require.Len(t, d.Jobs, len(keys), "one explanation per job")
	byAction := map[string]ScaleAction{}
	for _, a := range d.Actions {
		byAction[a.Job] = a
	}
	for i, e := range d.Jobs {
		require.True(t, keys[e.Job], "explanation for unknown job %s", e.Job)
		if i > 0 {
			require.Less(t, d.Jobs[i-1].Job, e.Job, "explanations are sorted by job, one each")
		}
		assert.Contains(t, Limits, e.Limit, e.Job)
		assert.NotEqual(t, LimitNotRunning, e.Limit, "Plan sees only Running jobs")
		assert.Regexp(t, digit, e.Message, "%s: a sentence with numbers", e.Job)
		a, acted := byAction[e.Job]
		switch {
		case acted && opts.DryRun:
			assert.Equal(t, LimitDryRun, e.Limit, e.Job)
		case acted:
			assert.Equal(t, a.To, e.To, e.Job)
			assert.Equal(t, a.From, e.From, e.Job)
		default:
			assert.Equal(t, e.From, e.To, e.Job)
			assert.NotEqual(t, LimitGrowing, e.Limit, "%s is growing without an action", e.Job)
			assert.NotEqual(t, LimitDryRun, e.Limit, "%s is held by a dry run without an action", e.Job)
		}
		if acted && a.To > a.From && !opts.DryRun {
			assert.Contains(t, []Limit{LimitGrowing, LimitAtMax}, e.Limit, "%s grew this cycle: %s", e.Job, e.Message)
		}
		if acted && a.To < a.From && !opts.DryRun {
			assert.NotContains(t, []Limit{LimitGrowing, LimitAtMax, LimitCoolDown, LimitQuota, LimitSettling}, e.Limit,
				"%s shrank this cycle: %s", e.Job, e.Message)
		}
		if e.Limit == LimitAtMax {
			assert.Equal(t, e.Max, e.To, e.Job)
		}
		if e.Limit == LimitAtMin {
			assert.Equal(t, e.Min, e.To, e.Job)
		}
		if e.Limit == LimitCoolDown {
			assert.Positive(t, e.CoolDownLeft, e.Job)
		}
		if e.Limit == LimitYieldedToPriority || e.Limit == LimitYieldedToMinimum {
			assert.NotEmpty(t, e.Pods, e.Job)
		}
		if e.Limit == LimitFairShare {
			assert.NotEmpty(t, e.Other, e.Job)
			assert.NotEqual(t, e.Job, e.Other, e.Job)
		}
		assert.True(t, slices.Contains(Limits, e.Limit))
	}
}
