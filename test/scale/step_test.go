package scale

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/framework"
)

func secs(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v * float64(time.Second))
	}
	return out
}

func TestPercentile(t *testing.T) {
	oneToTen := secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	oneToTwenty := secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one", secs(3), 0.95, 3 * time.Second},
		{"p50 of ten: the fifth", oneToTen, 0.5, 5 * time.Second},
		{"p95 of ten: the tenth", oneToTen, 0.95, 10 * time.Second},
		{"p95 of twenty: the nineteenth", oneToTwenty, 0.95, 19 * time.Second},
		{"p50 of two: the first", secs(1, 9), 0.5, time.Second},
		{"p0: the smallest", oneToTen, 0, time.Second},
		{"p100: the largest", oneToTen, 1, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Percentile(c.sorted, c.q))
		})
	}
}

func TestWebPending(t *testing.T) {
	w := Window{step, step.Add(time.Minute)}
	pod := func(created, bound float64) PodTimes {
		p := PodTimes{Created: step.Add(secs(created)[0])}
		if bound >= 0 {
			p.Bound = step.Add(secs(bound)[0])
		}
		return p
	}
	for _, c := range []struct {
		name string
		pods []PodTimes
		want Pending
	}{
		{"none", nil, Pending{}},
		{"created before the step: not the step's", []PodTimes{pod(-5, 1)}, Pending{}},
		{"created after the window: not the step's", []PodTimes{pod(60, 61)}, Pending{}},
		{"one bound", []PodTimes{pod(1, 3.5)}, Pending{N: 1, P50: 2500 * time.Millisecond, P95: 2500 * time.Millisecond, Max: 2500 * time.Millisecond}},
		{"twenty: p50 the tenth, p95 the nineteenth", []PodTimes{
			pod(0, 20), pod(0, 1), pod(0, 2), pod(0, 3), pod(0, 4), pod(0, 5), pod(0, 6), pod(0, 7), pod(0, 8), pod(0, 9),
			pod(0, 10), pod(0, 11), pod(0, 12), pod(0, 13), pod(0, 14), pod(0, 15), pod(0, 16), pod(0, 17), pod(0, 18), pod(0, 19)},
			Pending{N: 20, P50: 10 * time.Second, P95: 19 * time.Second, Max: 20 * time.Second}},
		{"unbound: pending until the window ends", []PodTimes{pod(10, -1), pod(20, 21)},
			Pending{N: 2, Unbound: 1, P50: time.Second, P95: 50 * time.Second, Max: 50 * time.Second}},
		{"bound after the window: unbound in it", []PodTimes{pod(30, 90)},
			Pending{N: 1, Unbound: 1, P50: 30 * time.Second, P95: 30 * time.Second, Max: 30 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, WebPending(c.pods, w))
		})
	}
}

func TestPendingString(t *testing.T) {
	assert.Equal(t, "–", Pending{}.String())
	assert.Equal(t, "0.5 s / 2.0 s / 3.2 s", Pending{N: 3, P50: 500 * time.Millisecond, P95: 2 * time.Second, Max: 3200 * time.Millisecond}.String())
	assert.Equal(t, "at least 1.0 s / 1.0 s / 1.0 s (2 not bound)", Pending{N: 2, Unbound: 2, P50: time.Second, P95: time.Second, Max: time.Second}.String())
}

func TestFloor(t *testing.T) {
	for _, c := range []struct {
		name                  string
		deleted, created      int
		controller, scheduler float64
		want                  time.Duration
	}{
		{"nothing to do", 0, 0, 300, 300, 0},
		{"deletions only", 600, 0, 300, 300, 2 * time.Second},
		{"creations also bound", 0, 300, 300, 100, 4 * time.Second},
		{"the step up at 300 nodes", 800, 200, 300, 300, 4 * time.Second},
		{"the defaults' rates", 100, 100, 20, 50, 12 * time.Second},
		{"no rate: no floor", 10, 10, 0, 50, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Floor(c.deleted, c.created, c.controller, c.scheduler))
		})
	}
}

func TestAPIQPS(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		want  float64
		err   string
	}{
		{"set", []string{"--kube-api-burst=500", "--kube-api-qps=300"}, 300, ""},
		{"fractional", []string{"--kube-api-qps=12.5"}, 12.5, ""},
		{"not set: the default", []string{"--kube-api-burst=500"}, 20, ""},
		{"not a number", []string{"--kube-api-qps=lots"}, 0, "want a positive number"},
		{"not positive", []string{"--kube-api-qps=0"}, 0, "want a positive number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := APIQPS(c.flags, 20)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, c.want, got, 1e-9)
		})
	}
	qps, err := APIQPS(ControllerManagerFlags, DefaultControllerManagerQPS)
	require.NoError(t, err, "the run's own flags")
	assert.Positive(t, qps)
}

// TestFiguresAreSplitByStep: each step counts the pods, preemptions and
// requests of its own window only.
func TestFiguresAreSplitByStep(t *testing.T) {
	settles := []Settle{
		{Name: "down", Start: step, Total: 9 * time.Second, Figures: StepFigures{Removed: 0}},                        // [0 s, 10 s)
		{Name: "up", Start: step.Add(20 * time.Second), Total: 19 * time.Second, Figures: StepFigures{Removed: 150}}, // [20 s, 40 s)
	}
	after := func(s float64) time.Time { return step.Add(secs(s)[0]) }
	web := []PodTimes{
		{Created: after(-30), Bound: after(-29)}, // the fill's
		{Created: after(21), Bound: after(22)},
		{Created: after(21), Bound: after(25)},
		{Created: after(39), Bound: after(45)}, // bound after the step: pending until it ended
	}
	preempted := []time.Time{after(5), after(20), after(30), after(39.9), after(40)}
	edl := func(at float64, agent string) framework.AuditEvent {
		return framework.AuditEvent{Verb: "patch", UserAgent: agent, Received: after(at)}
	}
	requests := []framework.AuditEvent{
		edl(1, "edl/v1"), edl(9.9, "edl/v1"), edl(10, "edl/v1"), edl(15, "edl/v1"),
		edl(20, "edl/v1"), edl(25, "edl/v1 (leader-election)"), edl(30, "edl/v1"),
	}
	fillFigures(settles, web, preempted, requests, 100, 50)

	assert.Equal(t, StepFigures{Preempted: 1, Requests: 2, Measured: true}, settles[0].Figures)
	assert.Equal(t, StepFigures{
		WebPending: Pending{N: 3, Unbound: 1, P50: 1 * time.Second, P95: 4 * time.Second, Max: 4 * time.Second},
		Preempted:  3, Removed: 150, Requests: 2,
		Floor:    (150+3)*time.Second/100 + 3*time.Second/50,
		Measured: true,
	}, settles[1].Figures)

	table := FiguresMarkdown(settles)
	assert.Contains(t, table, "| up | 3 | at least 1.0 s / 4.0 s / 4.0 s (1 not bound) | 3 | 150 | 2 | 1.6 s |")
	assert.Contains(t, table, "client rate of 300 requests/s", "the rate the run sets")
	assert.Empty(t, FiguresMarkdown([]Settle{{Name: "an old run's"}}), "a run made before the figures has none")
}

// TestSizesOfOldRunsLackTheStepFigures: a run kept before the web pods'
// pending time and the preemptions were measured shows "—" in their columns.
func TestSizesOfOldRunsLackTheStepFigures(t *testing.T) {
	dir := t.TempDir()
	old := `{"Nodes": 300, "NodeCPU": 12, "Jobs": 50, "Pods": 6036, "ShrinkEDL": 27, "ShrinkTotal": 27, "ShrinkSettled": true, "Interval": 5}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes-300.json"), []byte(old), 0o600))
	measured := Settle{Settled: true, Figures: StepFigures{Measured: true, Preempted: 387,
		WebPending: Pending{N: 200, P50: time.Second, P95: 12300 * time.Millisecond, Max: 20 * time.Second}}}
	r := &Result{Config: DefaultConfig, Settles: []Settle{{Settled: true}, {Settled: true}, measured},
		Cycle: Histogram{Bounds: []float64{0.01, math.Inf(1)}, Counts: []uint64{1, 1}, Count: 1, Sum: 0.005}}
	r.Config.Nodes = 1000
	require.NoError(t, SaveSummary(dir, Summarize(r)))
	runs, err := LoadSummaries(dir)
	require.NoError(t, err)
	require.Len(t, runs, 2)

	lines := strings.Split(strings.TrimSpace(SizesMarkdown(runs)), "\n")
	require.Len(t, lines, 4)
	columns := func(line string) []string { return strings.Split(strings.Trim(line, "|"), " | ") }
	header := columns(lines[0])
	require.Len(t, columns(lines[1]), 1, "the rule")
	assert.Equal(t, len(header), strings.Count(lines[1], "|")-1, "a rule cell per column")
	oldRow, newRow := columns(lines[2]), columns(lines[3])
	require.Len(t, oldRow, len(header))
	require.Len(t, newRow, len(header))
	pending := indexOf(header, "web grows back: web pods' pending p95")
	preempted := indexOf(header, "web grows back: trainers preempted by kube-scheduler")
	require.Positive(t, pending)
	require.Positive(t, preempted)
	assert.Equal(t, "—", oldRow[pending])
	assert.Equal(t, "—", oldRow[preempted])
	assert.Equal(t, "12.3 s", newRow[pending])
	assert.Equal(t, "387", newRow[preempted])

	b, err := json.Marshal(runs[0])
	require.NoError(t, err)
	assert.NotContains(t, string(b), "ShrinkPreempted", "an old run stays without the figures")
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if strings.TrimSpace(x) == v {
			return i
		}
	}
	return -1
}

func TestCoresInAStepsWindow(t *testing.T) {
	t0 := at(0)
	reading := func(sec int, machine, apiServer float64, more ...float64) CPUReading {
		r := CPUReading{At: t0.Add(time.Duration(sec) * time.Second), CPU: map[string]float64{Machine: machine, framework.APIServer: apiServer}}
		if len(more) > 0 {
			r.CPU["edl"] = more[0]
		}
		return r
	}
	readings := []CPUReading{reading(0, 0, 0), reading(1, 10, 1), reading(2, 11, 2, 5), reading(3, 13, 2.5, 6), reading(5, 20, 3, 7)}

	// The first and last readings inside [1 s, 3 s]: 3 s of machine time and
	// 1.5 of kube-apiserver's over 2 s; edl, missing from the first, is left out.
	got := CoresIn(readings, Window{Start: t0.Add(time.Second), End: t0.Add(3 * time.Second)})
	assert.Equal(t, map[string]float64{Machine: 1.5, framework.APIServer: 0.75}, got)

	assert.Nil(t, CoresIn(readings, Window{Start: t0.Add(4 * time.Second), End: t0.Add(5 * time.Second)}), "one reading in the window")
	assert.Nil(t, CoresIn(readings, Window{Start: t0.Add(6 * time.Second), End: t0.Add(9 * time.Second)}), "none")

	settles := []Settle{{Name: "up", Start: t0.Add(2 * time.Second), Total: 2 * time.Second}, {Name: "later", Start: t0.Add(time.Minute)}}
	FillCores(settles, readings)
	// The window runs a second past the settle: the readings at 2 s and 5 s.
	cores := settles[0].Figures.Cores
	assert.Len(t, cores, 3)
	assert.InDelta(t, 3.0, cores[Machine], 1e-9)
	assert.InDelta(t, 1.0/3, cores[framework.APIServer], 1e-9)
	assert.InDelta(t, 2.0/3, cores["edl"], 1e-9)
	assert.Nil(t, settles[1].Figures.Cores)

	table := CoresMarkdown(settles, 2, []string{framework.APIServer, "edl"})
	assert.Contains(t, table, "of the machine's 2")
	assert.Contains(t, table, "| step | the machine | kube-apiserver | edl |\n|---|---:|---:|---:|\n")
	assert.Contains(t, table, "| up | 3.00 | 0.33 | 0.67 |\n")
	assert.NotContains(t, table, "later", "a step without readings has no row")
	assert.Empty(t, CoresMarkdown(settles[1:], 2, Components), "no table without readings")
}
