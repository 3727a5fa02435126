package planner

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// goodputBatch is the global batch of the jobs the goodput cases model.
const goodputBatch = 64

// scalesBy gives the job a progress report whose model was fitted to the
// step times at 1 to 4 trainers on one node of a job that scales
// (scaling), scales partly (partly), does not (flat) or slows down
// (slower), at a global batch of
// goodputBatch, with left the time it has left (0: not said).
func scalesBy(kind string, left time.Duration) jobMutator {
	m := fuzzModels()[map[string]int{"scaling": 0, "flat": 1, "slower": 2, "partly": 3}[kind]]
	return func(j *Job) { j.Progress = &Progress{Model: m, Batch: goodputBatch, Nodes: 1, Left: left} }
}

// Step times of a job that scales (each trainer computes its share of the
// batch, the synchronisation is small) and of one that does not (the
// synchronisation grows as fast as the computation shrinks).
var (
	scalingSteps = []float64{1.0, 0.52, 0.35, 0.27}
	flatSteps    = []float64{1.0, 0.98, 0.99, 1.0}
	partlySteps  = []float64{1.0, 0.7, 0.6, 0.55}
)

func goodputCases() []planCase {
	n2x4 := nodes("n", 2, res(4, 64, 0))
	goodput := Options{Now: t0, Policy: PolicyGoodput}
	return []planCase{
		{
			name:  "goodput: the idle room goes to the job it speeds up, not to the one that does not scale",
			nodes: n2x4,
			jobs: []Job{
				newJob("scales", withRange(1, 8), runningOn("n-0"), scalesBy("scaling", 0)),
				newJob("flat", withRange(1, 8), runningOn("n-1"), scalesBy("flat", 0)),
			},
			opts:    goodput,
			want:    map[string]int32{"scales": 6},
			reasons: map[string][]string{"scales": {"scale up by 5", "a 2nd trainer adds", "the most of priority 0"}},
		},
		{
			name:  "fulfillment: the same jobs share the room evenly",
			nodes: n2x4,
			jobs: []Job{
				newJob("scales", withRange(1, 8), runningOn("n-0"), scalesBy("scaling", 0)),
				newJob("flat", withRange(1, 8), runningOn("n-1"), scalesBy("flat", 0)),
			},
			opts: Options{Now: t0},
			want: map[string]int32{"scales": 3, "flat": 4},
		},
		{
			// scales' 4th trainer adds about 0.8× (2.9× → 3.7×), partly's
			// 2nd about 0.4× (1× → 1.4×). Per unit of work, the 2nd would
			// cut partly's time by 0.3 of its time at one trainer, the 4th
			// scales' by 0.08: a policy that shortened the job at the
			// smaller size (1/S(n) − 1/S(n+1)) would give it to partly.
			name:  "goodput: the trainer goes where throughput rises most, however far along its job is",
			nodes: nodes("n", 1, res(5, 64, 0)),
			jobs: []Job{
				newJob("scales", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("scaling", 0)),
				newJob("partly", withRange(1, 4), runningOn("n-0"), scalesBy("partly", 0)),
			},
			opts:    Options{Now: t0, Policy: PolicyGoodput, MaxLoadDesired: 1},
			want:    map[string]int32{"scales": 4},
			reasons: map[string][]string{"scales": {"scale up by 1", "a 4th trainer adds 0.8", "a 2nd trainer would add 0.4"}},
		},
		{
			// Over MaxLoadDesired (4 of 4 CPU), one trainer goes: z-partly's
			// 2nd adds 0.4×, a-scales' 0.9×. By fulfillment (a tie) the
			// key would pick a-scales.
			name:  "goodput: load takes first the trainer that adds least",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs: []Job{
				newJob("a-scales", withRange(1, 4), withCurrent(2), runningOn("n-0", "n-0"), scalesBy("scaling", 0)),
				newJob("z-partly", withRange(1, 4), withCurrent(2), runningOn("n-0", "n-0"), scalesBy("partly", 0)),
			},
			opts: goodput,
			want: map[string]int32{"z-partly": 1},
		},
		{
			name:  "fulfillment: the same load takes from the first by key",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs: []Job{
				newJob("a-scales", withRange(1, 4), withCurrent(2), runningOn("n-0", "n-0"), scalesBy("scaling", 0)),
				newJob("z-partly", withRange(1, 4), withCurrent(2), runningOn("n-0", "n-0"), scalesBy("partly", 0)),
			},
			opts: Options{Now: t0},
			want: map[string]int32{"a-scales": 1},
		},
		{
			name:  "goodput: jobs that report nothing share as under fulfillment",
			nodes: n2x4,
			jobs: []Job{
				newJob("a", withRange(1, 8), runningOn("n-0")),
				newJob("b", withRange(1, 8), runningOn("n-1")),
			},
			opts: goodput,
			want: map[string]int32{"a": 4, "b": 3},
		},
		{
			name:  "goodput: a trainer is not worth a restart that costs more than it saves (10 s left, restart 30 s)",
			nodes: n2x4,
			jobs: []Job{newJob("short", withRange(1, 8), runningOn("n-0"), scalesBy("scaling", 10*time.Second),
				restartsOnResize(time.Time{}, 30*time.Second))},
			opts: goodput,
		},
		{
			name:  "goodput: with an hour left, the same job grows",
			nodes: n2x4,
			jobs: []Job{newJob("long", withRange(1, 8), runningOn("n-0"), scalesBy("scaling", time.Hour),
				restartsOnResize(time.Time{}, 30*time.Second))},
			opts: goodput,
			want: map[string]int32{"long": 7},
		},
		{
			name:  "goodput: rebalancing moves the flat job's trainers above its minimum to the job that scales",
			nodes: nodes("n", 1, res(5, 64, 0)),
			jobs: []Job{
				newJob("scales", withRange(1, 4), runningOn("n-0"), scalesBy("scaling", 0)),
				newJob("flat", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("flat", 0)),
			},
			opts: Options{Now: t0, Policy: PolicyGoodput, MaxRebalancePerCycle: 8},
			want: map[string]int32{"scales": 3, "flat": 1},
			reasons: map[string][]string{
				"flat":   {"scale down by 2: a 3rd trainer adds -0.0", "to scales, a 2nd trainer would add 0.9", "more than 2× as much"},
				"scales": {"scale up by 2: flat gives back 2 trainers for it, where it adds less; a 2nd trainer adds 0.9"},
			},
		},
		{
			name:  "goodput: a job at its minimum gives nothing, however little its trainers add",
			nodes: nodes("n", 1, res(5, 64, 0)),
			jobs: []Job{
				newJob("scales", withRange(1, 4), runningOn("n-0"), scalesBy("scaling", 0)),
				newJob("flat", withRange(3, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("flat", 0)),
			},
			opts: Options{Now: t0, Policy: PolicyGoodput, MaxRebalancePerCycle: 8},
		},
		{
			name:    "goodput: a job its 3rd trainer slows down gives it back",
			nodes:   nodes("n", 1, res(4, 64, 0)),
			jobs:    []Job{newJob("slower", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", 0))},
			opts:    goodput,
			want:    map[string]int32{"slower": 2},
			reasons: map[string][]string{"slower": {"scale down by 1: a 3rd trainer adds -0.1", "(0.91× → 0.77× one trainer's throughput); the job runs faster without it"}},
		},
		{
			name:  "goodput: ... and where a job it speeds up can take it, rebalancing moves it there",
			nodes: nodes("n", 1, res(5, 64, 0)),
			jobs: []Job{
				newJob("slower", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", 0)),
				newJob("scales", withRange(1, 4), runningOn("n-0"), scalesBy("scaling", 0)),
			},
			opts: goodput,
			// Its 2nd trainer slows it too, if by less than MinGain:
			// moved as well.
			want: map[string]int32{"slower": 1, "scales": 3},
		},
		{
			name:  "goodput: a 2nd trainer that costs less than MinGain (0.09×) is kept",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs:  []Job{newJob("slower", withRange(1, 4), withCurrent(2), runningOn("n-0", "n-0"), scalesBy("slower", 0))},
			opts:  goodput,
		},
		{
			name:  "goodput: a job that restarts on a resize keeps the trainer when the time it would save is less than a restart (10 s left, restart 30 s)",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs: []Job{newJob("slower", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", 10*time.Second),
				restartsOnResize(time.Time{}, 30*time.Second))},
			opts: goodput,
		},
		{
			name:  "goodput: ... and gives it back with an hour left",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs: []Job{newJob("slower", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", time.Hour),
				restartsOnResize(time.Time{}, 30*time.Second))},
			opts: goodput,
			want: map[string]int32{"slower": 2},
		},
		{
			name:  "goodput: never below the minimum",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs:  []Job{newJob("slower", withRange(3, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", 0))},
			opts:  goodput,
		},
		{
			name:  "fulfillment: the same job keeps its trainers",
			nodes: nodes("n", 1, res(4, 64, 0)),
			jobs:  []Job{newJob("slower", withRange(1, 4), withCurrent(3), runningOn("n-0", "n-0", "n-0"), scalesBy("slower", 0))},
			opts:  Options{Now: t0},
		},
	}
}

func TestPlanGoodput(t *testing.T) {
	for _, tc := range goodputCases() {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int64]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		assert.Equal(t, want, ordinal(n))
	}
}

// TestGoodputWithoutReportsIsFulfillment: a job that reports no progress
// keeps today's treatment under goodput. Every table case of the planner
// whose jobs report nothing plans alike under both policies — growth,
// rebalancing, load, pools, prices and all: the same actions, causes and
// reasons, and the same explanations.
func TestGoodputWithoutReportsIsFulfillment(t *testing.T) {
	var cases []planCase
	for _, f := range []func() []planCase{planCases, rebalanceCases, priceCases, poolCases, modelCases} {
		cases = append(cases, f()...)
	}
	tried := 0
	for _, tc := range cases {
		if tc.opts.Policy != "" || slices.ContainsFunc(tc.jobs, func(j Job) bool { return j.Progress != nil }) {
			continue
		}
		tried++
		t.Run(tc.name, func(t *testing.T) {
			snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
			fulfillment := Decide(snap, tc.jobs, Queue{}, tc.opts)
			opts := tc.opts
			opts.Policy = PolicyGoodput
			goodput := Decide(snap, tc.jobs, Queue{}, opts)
			assert.Equal(t, fulfillment.Actions, goodput.Actions)
			assert.Equal(t, fulfillment.Jobs, goodput.Jobs)
		})
	}
	assert.Greater(t, tried, 50, "the cases tried")
}
