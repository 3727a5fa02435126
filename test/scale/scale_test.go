package scale

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/framework"
)

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tedl\nVmPeak:\t  900000 kB\nVmRSS:\t   51234 kB\nRssAnon:\t 40000 kB\n"
	got, err := ParseVmRSS(status)
	require.NoError(t, err)
	assert.Equal(t, int64(51234*1024), got)

	for name, bad := range map[string]string{
		"no line":  "Name:\tedl\n",
		"no unit":  "VmRSS:\t51234\n",
		"not a nr": "VmRSS:\tlots kB\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseVmRSS(bad)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "VmRSS")
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime 250, stime 130 ticks) after a command name
	// that holds a space and a parenthesis.
	stat := "4242 (edl (x) y) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 130 0 0 20 0 12 0 100 900000000 12500 18446744073709551615\n"
	got, err := ParseStatCPU(stat)
	require.NoError(t, err)
	assert.InDelta(t, 3.8, got, 1e-9)

	_, err = ParseStatCPU("4242 edl S 1")
	require.ErrorContains(t, err, "no command name")
	_, err = ParseStatCPU("4242 (edl) S 1 2 3")
	require.ErrorContains(t, err, "fields after the command name")
	_, err = ParseStatCPU("4242 (edl) S 1 4242 4242 0 -1 4194560 5000 0 0 0 x 130 0")
	require.ErrorContains(t, err, `CPU time "x"`)
}

func TestParseMachineBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice:
	// busy is 100+20+30 + 6+7+8 ticks; idle and iowait are not.
	busy, err := ParseMachineBusy("cpu  100 20 30 400 50 6 7 8 9 1\ncpu0 50 10 15 200 25 3 3 4 0 0\n")
	require.NoError(t, err)
	assert.InDelta(t, 1.71, busy, 1e-9)

	_, err = ParseMachineBusy("intr 1 2 3 4 5 6 7 8 9\n")
	require.ErrorContains(t, err, "want cpu and at least 8 times")
	_, err = ParseMachineBusy("cpu 1 2 3 4 5\n")
	require.ErrorContains(t, err, "want cpu and at least 8 times")
	_, err = ParseMachineBusy("cpu 1 2 3 4 5 x 7 8\n")
	require.ErrorContains(t, err, `CPU time "x"`)
}

func TestReadCPUOfThisMachineAndProcess(t *testing.T) {
	r, err := ReadCPU(map[string]int{"self": os.Getpid(), "gone": math.MaxInt32})
	require.NoError(t, err)
	assert.Positive(t, r.CPU[Machine])
	assert.Contains(t, r.CPU, "self")
	assert.NotContains(t, r.CPU, "gone", "a process that is not there is left out")
}

func TestReadProcOfThisProcess(t *testing.T) {
	s, err := ReadProc(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, s.RSS)
	assert.GreaterOrEqual(t, s.CPU, 0.0)
}

// auditLog is six lines of a kube-apiserver audit log: edl's watch (its
// first stage counted), edl's patch (its last, answered 200), a list by
// another client, edl's lease renewal, and a status patch's first stage,
// not counted, and its last, refused with a 409.
const auditLog = `{"kind":"Event","stage":"ResponseStarted","verb":"watch","userAgent":"edl/v1.2 (linux/amd64)","objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-01-01T10:00:01.000000Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","userAgent":"edl/v1.2 (linux/amd64)","objectRef":{"resource":"replicasets","namespace":"a"},"requestReceivedTimestamp":"2026-01-01T10:00:05.000000Z","responseStatus":{"metadata":{},"code":200}}
{"kind":"Event","stage":"ResponseComplete","verb":"list","userAgent":"kube-controller-manager/v1.36.3","objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-01-01T10:00:06.000000Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"update","userAgent":"edl/v1.2 (linux/amd64) (leader-election)","objectRef":{"resource":"leases"},"requestReceivedTimestamp":"2026-01-01T10:00:12.000000Z"}
{"kind":"Event","stage":"ResponseStarted","verb":"patch","userAgent":"edl/v1.2 (linux/amd64)","objectRef":{"resource":"trainingjobs","subresource":"status"},"requestReceivedTimestamp":"2026-01-01T10:00:13.000000Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","userAgent":"edl/v1.2 (linux/amd64)","objectRef":{"resource":"trainingjobs","subresource":"status"},"requestReceivedTimestamp":"2026-01-01T10:00:13.000000Z","responseStatus":{"metadata":{},"status":"Failure","reason":"Conflict","code":409}}
`

func at(sec int) time.Time { return time.Date(2026, 1, 1, 10, 0, sec, 0, time.UTC) }

func TestCountAndBucketRequests(t *testing.T) {
	events, err := framework.ReadEDLRequests(strings.NewReader(auditLog), time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Len(t, events, 4, "edl's requests, one event each")
	assert.Equal(t, []bool{false, true, false, false}, []bool{events[0].Succeeded(), events[1].Succeeded(), events[2].Succeeded(), events[3].Succeeded()},
		"the patch answered 200 succeeded; the watch's first stage has no code, the renewal none here, and the status patch was refused with a 409")

	assert.Equal(t, []RequestCount{
		{Verb: "patch", Resource: "replicasets", N: 1},
		{Verb: "patch", Resource: "trainingjobs/status", N: 1},
		{Verb: "watch", Resource: "pods", N: 1},
		{Verb: "update", Resource: "leases", LeaderElection: true, N: 1},
	}, CountRequests(events))

	buckets := BucketRequests(events, at(0), at(20), 10*time.Second)
	require.Len(t, buckets, 2)
	assert.Equal(t, map[string]int{KindWatch: 1, KindWrite: 1}, buckets[0].ByKind)
	assert.Equal(t, map[string]int{KindWrite: 1}, buckets[1].ByKind, "the lease renewal is left out")
	assert.Nil(t, BucketRequests(events, at(20), at(0), time.Second), "an empty span has no buckets")

	windowed, err := framework.ReadEDLRequests(strings.NewReader(auditLog), at(2), at(12))
	require.NoError(t, err)
	assert.Len(t, windowed, 2, "the patch at 5 s and the renewal at 12 s")

	_, err = framework.ReadEDLRequests(strings.NewReader(`{"userAgent":"edl/x", broken`+"\n"), time.Time{}, time.Time{})
	require.ErrorContains(t, err, "audit log line")
}

const metricsPage = `# HELP edl_autoscaler_plan_duration_seconds Time one autoscaling cycle takes.
# TYPE edl_autoscaler_plan_duration_seconds histogram
edl_autoscaler_plan_duration_seconds_bucket{le="0.001"} 0
edl_autoscaler_plan_duration_seconds_bucket{le="0.002"} 50
edl_autoscaler_plan_duration_seconds_bucket{le="0.004"} 90
edl_autoscaler_plan_duration_seconds_bucket{le="0.008"} 100
edl_autoscaler_plan_duration_seconds_bucket{le="+Inf"} 100
edl_autoscaler_plan_duration_seconds_sum 0.25
edl_autoscaler_plan_duration_seconds_count 100
# TYPE edl_leader gauge
edl_leader 1
`

func TestParseHistogramAndQuantiles(t *testing.T) {
	h, err := ParseHistogram(strings.NewReader(metricsPage), CycleMetric)
	require.NoError(t, err)
	assert.Equal(t, uint64(100), h.Count)
	assert.InDelta(t, 0.0025, h.Mean(), 1e-12)
	// The 50th observation is the top of the (1 ms, 2 ms] bucket; the 99th
	// is 9/10 into (4 ms, 8 ms].
	assert.InDelta(t, 0.002, h.Quantile(0.5), 1e-12)
	assert.InDelta(t, 0.0076, h.Quantile(0.99), 1e-12)
	assert.InDelta(t, 0.0015, h.Quantile(0.25), 1e-12)
	assert.True(t, math.IsNaN(Histogram{}.Quantile(0.5)))

	_, err = ParseHistogram(strings.NewReader(metricsPage), "edl_leader")
	require.ErrorContains(t, err, "want a histogram")
	_, err = ParseHistogram(strings.NewReader(metricsPage), "edl_missing")
	require.ErrorContains(t, err, "no edl_missing")
}

func TestCosts(t *testing.T) {
	samples := []Sample{
		{At: 0, RSS: 10 << 20, CPU: 1},
		{At: 30 * time.Second, RSS: 20 << 20, CPU: 1.5},
		{At: 60 * time.Second, RSS: 30 << 20, CPU: 2},
		{At: 120 * time.Second, RSS: 40 << 20, CPU: 8},
	}
	costs := Costs(samples, []Phase{{Name: "idle", Start: 0, End: time.Minute}, {Name: "busy", Start: time.Minute, End: 2 * time.Minute}, {Name: "none", Start: time.Hour, End: 2 * time.Hour}})
	require.Len(t, costs, 3)
	assert.InDelta(t, 1.0, costs[0].CPUPerMinute, 1e-9)
	assert.Equal(t, int64(20<<20), costs[0].MeanRSS)
	assert.Equal(t, int64(30<<20), costs[0].PeakRSS)
	assert.InDelta(t, 6.0, costs[1].CPUPerMinute, 1e-9)
	assert.True(t, math.IsNaN(costs[2].CPUPerMinute), "no samples, no figure")
	assert.Equal(t, int64(40<<20), PeakRSS(samples))
}

func TestConfig(t *testing.T) {
	c := DefaultConfig
	require.NoError(t, c.Validate())
	assert.Equal(t, int32(600), c.WebReplicas(), "a third of 300 × 12 CPUs in pods of 2")
	assert.Equal(t, int32(400), c.WebShrunk())
	// 0.97 × 3,600 − 1,200 − 25 = 2,267 CPUs: 4,534 trainers, a quarter more
	// over 50 jobs.
	assert.Equal(t, int32(114), c.TrainerMax())

	bad := c
	bad.Namespaces = 0
	require.ErrorContains(t, bad.Validate(), "namespaces")
	bad = c
	bad.Jobs = 10000
	require.ErrorContains(t, bad.Validate(), "do not fit")
}

func TestSummariesMakeOneTableBySize(t *testing.T) {
	run := func(nodes int, rss int64, cycle float64) *Result {
		c := DefaultConfig
		c.Nodes, c.Jobs = nodes, nodes/6
		return &Result{Config: c, Pods: nodes * 15,
			Samples: []Sample{{At: 0, RSS: rss}, {At: 30 * time.Second, RSS: 2 * rss}, {At: 90 * time.Second, RSS: rss}},
			Phases: []Phase{{Name: "filling the cluster", Start: 0, End: time.Minute},
				{Name: "steady, nothing changes", Start: time.Minute, End: 2 * time.Minute}},
			Buckets: []RequestBucket{{At: 0, ByKind: map[string]int{KindWrite: 100, KindGet: 20}},
				{At: 10 * time.Second, ByKind: map[string]int{KindWrite: 20}}, {At: 70 * time.Second, ByKind: map[string]int{KindWrite: 5}}},
			Steady: []RequestCount{{Verb: "update", Resource: "leases", LeaderElection: true, N: 60}, {Verb: "patch", Resource: "replicasets", N: 2}},
			Settles: []Settle{{Settled: true}, {Settled: true, EDL: 5 * time.Second, Total: 7 * time.Second},
				{Settled: true, EDL: 15 * time.Second, Total: 16 * time.Second}},
			Cycle: Histogram{Bounds: []float64{cycle, 2 * cycle, math.Inf(1)}, Counts: []uint64{50, 100, 100}, Count: 100, Sum: cycle * 100}}
	}
	dir := t.TempDir()
	for _, r := range []*Result{run(2000, 200<<20, 0.04), run(300, 40<<20, 0.008)} {
		require.NoError(t, SaveSummary(dir, Summarize(r)))
	}
	runs, err := LoadSummaries(dir)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, []int{300, 2000}, []int{runs[0].Nodes, runs[1].Nodes}, "smallest cluster first")
	s := runs[1]
	assert.InDelta(t, 400.0, s.PeakRSS, 1e-9)
	assert.InDelta(t, 200.0, s.SteadyRSS, 1e-9, "the steady window's mean")
	assert.InDelta(t, 12.0, s.PeakRequests, 1e-9, "the busiest 10 s: 120 requests")
	assert.InDelta(t, 7.0, s.MeanRequests, 1e-9, "140 requests in the fill's 20 s of buckets; the steady window's are not busy")
	assert.Equal(t, 0, s.SteadyLists)
	assert.Equal(t, 2, s.SteadyWrites, "the leader's lease renewals are not the controller's writes")
	assert.InDelta(t, 5.0, s.GrowEDL, 1e-9)
	assert.InDelta(t, 15.0, s.ShrinkEDL, 1e-9)
	assert.True(t, s.FillSettled && s.GrowSettled && s.ShrinkSettled)

	table := SizesMarkdown(runs)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 4, "a header, its rule and a row per size")
	assert.True(t, strings.HasPrefix(lines[3], "| 2000 (12) | 30000 | 333 | 400.0 MiB | 200.0 MiB |"), lines[3])
	assert.Contains(t, lines[3], "| 15 s (3.0 intervals) / 16 s |")

	runs[1].GrowSettled = false
	assert.Contains(t, SizesMarkdown(runs), "| did not settle in 7 s |", "a step that did not settle says so, not when edl last scaled")
	paths, err := PlotSizes(dir, runs)
	require.NoError(t, err)
	for _, p := range paths {
		info, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, info.Size())
	}
}

// TestResultRoundTripsThroughJSON: make scale keeps the whole result as
// result.json, and -from writes the docs from it; the cycle histogram's +Inf
// bound is no JSON number.
func TestResultRoundTripsThroughJSON(t *testing.T) {
	in := &Result{Config: DefaultConfig, Pods: 7, Settles: []Settle{{Name: "fill", Settled: true, EDL: time.Second,
		Figures: StepFigures{Measured: true, Cores: map[string]float64{Machine: 1.95, "edl": 0.09}}}},
		Cycle: Histogram{Bounds: []float64{0.001, 0.01, math.Inf(1)}, Counts: []uint64{1, 3, 4}, Count: 4, Sum: 0.05}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out Result
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, in.Cycle, out.Cycle)
	assert.Equal(t, in.Settles, out.Settles)
	assert.Equal(t, in.Config, out.Config)
}
