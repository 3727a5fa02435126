package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/framework"
)

func TestIdeal(t *testing.T) {
	node := NodeShape{CPUMilli: 18000, MemMiB: 100 << 10, Pods: 110}
	trainer := func(lo, hi int) PodDemand {
		return PodDemand{Name: "trainer", CPUMilli: 5000, MemMiB: 8 << 10, Min: lo, Max: hi}
	}
	pserver := func(n int) PodDemand { return PodDemand{Name: "pserver", CPUMilli: 4000, MemMiB: 5 << 10, Max: n} }
	web := func(n int) PodDemand { return PodDemand{Name: "web", CPUMilli: 3000, MemMiB: 2 << 10, Min: n, Max: n} }
	tests := []struct {
		name   string
		nodes  int
		demand []PodDemand
		want   int64
	}{
		{name: "no demand", nodes: 3, want: 0},
		{name: "demand below capacity is placed whole", nodes: 3, demand: []PodDemand{trainer(0, 4), pserver(2)}, want: 28000},
		// 20 jobs of 60 trainers and 2 pservers on the original's cluster:
		// 20 nodes of 2 trainers + 2 pservers (18 CPU), 113 of 3 trainers (15).
		{name: "training, full size", nodes: 133, demand: []PodDemand{trainer(0, 1200), pserver(40)}, want: 20*18000 + 113*15000},
		{name: "trainers alone leave 3 CPU per node", nodes: 10, demand: []PodDemand{trainer(0, 100)}, want: 150000},
		// Three trainers and one web pod fill a node exactly.
		{name: "web pods fill the slivers", nodes: 10, demand: []PodDemand{trainer(0, 100), web(10)}, want: 180000},
		// A node holds at most 6 web pods; 60 must run, so 10 nodes are
		// all web pods and nothing else fits.
		{name: "minimums come first", nodes: 10, demand: []PodDemand{trainer(0, 100), web(60)}, want: 180000},
		{name: "memory binds", nodes: 1, demand: []PodDemand{{Name: "fat", CPUMilli: 1000, MemMiB: 60 << 10, Max: 5}}, want: 1000},
		{name: "pods per node bind", nodes: 1, demand: []PodDemand{{Name: "tiny", CPUMilli: 100, MemMiB: 1, Max: 500}}, want: 11000},
		// 100 web pods cannot all run on 10 nodes; the bound drops the
		// minimums rather than fail.
		{name: "unplaceable minimums are dropped", nodes: 10, demand: []PodDemand{web(100)}, want: 180000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed, total, err := Ideal(node, tt.nodes, tt.demand)
			require.NoError(t, err)
			assert.Equal(t, int64(tt.nodes)*18000, total)
			assert.Equal(t, tt.want, placed)
		})
	}
}

func TestVariant(t *testing.T) {
	for _, label := range []string{"edl", "no-edl", "edl+load=0.85", "edl+binpack", "no-edl+load=0.9+binpack", "edl+nogang"} {
		v, err := ParseVariant(label)
		require.NoError(t, err, label)
		assert.Equal(t, label, v.Label())
	}
	v, err := ParseVariant("edl+load=0.85+binpack")
	require.NoError(t, err)
	assert.Equal(t, Variant{Mode: On, MaxLoadDesired: 0.85, BinPack: true}, v)
	for _, bad := range []string{"", "on", "edl+load=2", "edl+load=x", "edl+fast"} {
		_, err := ParseVariant(bad)
		assert.Error(t, err, bad)
	}
}

func TestSummarize(t *testing.T) {
	s := func(at time.Duration, util float64, pending, web int) Sample {
		return Sample{At: at, Utilization: util, Ideal: 1, PendingJobs: pending, WebPending: web, RunningTrainers: 10}
	}
	r := &Result{
		Scenario: Shared, Variant: Variant{Mode: On}, WindowStart: 10 * time.Second, End: 40 * time.Second,
		Samples: []Sample{s(0, 0.1, 2, 0), s(10*time.Second, 0.8, 0, 3), s(20*time.Second, 0.9, 0, 0), s(40*time.Second, 1, 0, 1)},
		Jobs: []JobTiming{
			{Name: "a", Submitted: 0, FirstTrainer: 2 * time.Second, Running: 4 * time.Second},
			{Name: "b", Submitted: 10 * time.Second, FirstTrainer: -1, Running: -1}, // pending until the end: 30 s
		},
		Web: []PodWait{
			{Name: "before-window", Created: 5 * time.Second, Running: 30 * time.Second, Deleted: -1},
			{Name: "fast", Created: 11 * time.Second, Running: 12 * time.Second, Deleted: -1},
			{Name: "slow", Created: 11 * time.Second, Running: 20 * time.Second, Deleted: -1},
			{Name: "dropped", Created: 11 * time.Second, Running: -1, Deleted: 15 * time.Second},
			{Name: "still-pending", Created: 36 * time.Second, Running: -1, Deleted: -1}, // 4 s at the end
		},
	}
	got := Summarize(r)
	assert.Equal(t, 3, got.Samples)
	assert.InDelta(t, 0.9, got.MeanUtilization, 1e-9)
	assert.InDelta(t, 1, got.MeanIdeal, 1e-9)
	assert.Equal(t, 2, got.Jobs)
	assert.Equal(t, 1, got.NeverRunning)
	assert.Equal(t, 17*time.Second, got.MeanPending, "(4 s + 30 s) / 2")
	assert.Equal(t, 16*time.Second, got.MeanFirstTrainer, "(2 s + 30 s) / 2")
	assert.Equal(t, 3, got.WebPods)
	assert.Equal(t, 1, got.WebDropped)
	assert.Equal(t, 4*time.Second, got.WebP50)
	assert.Equal(t, 9*time.Second, got.WebP95)
	assert.Equal(t, 3, got.WebMostPending)

	// CPU held by jobs not Running: 10 % and 30 % of the cluster in two of
	// the three samples of the window.
	r.Samples[1].CPUHeldWaitingMilli, r.Samples[1].CPUAllocMilli = 1000, 10000
	r.Samples[2].CPUHeldWaitingMilli, r.Samples[2].CPUAllocMilli = 3000, 10000
	r.Samples[3].CPUAllocMilli = 10000
	held := Summarize(r)
	assert.InDelta(t, 0.4/3, held.MeanHeldWaiting, 1e-9)
	assert.InDelta(t, 0.3, held.MostHeldWaiting, 1e-9)
	r.Scenario = Training
	assert.Contains(t, Table(Training, []Summary{Summarize(r)}), "| CPU held by waiting jobs (Running pods of jobs not Running), mean / max | 13.3% / 30.0% |")

	table := Table(Shared, []Summary{got})
	assert.Contains(t, table, "| shared | edl | original, EDL on | original, EDL off |")
	assert.Contains(t, table, "| mean CPU allocation utilization | 90.0% | 83.4%")
	assert.Contains(t, table, "4.0 s / 9.0 s (9.0 s; 3 pods)")
}

// TestSmoke runs both experiments at the smoke size with EDL on, against the
// built edl binary, and checks what make experiment writes: samples, CSVs
// and a PNG; and that EDL started every job and grew them.
func TestSmoke(t *testing.T) {
	bin, err := framework.BuildEDL()
	require.NoError(t, err)
	dir := t.TempDir()

	size, err := LookupSize("smoke")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	results := map[Scenario]*Result{}
	for _, scenario := range []Scenario{Training, Shared} {
		var progress bytes.Buffer
		res, err := Run(ctx, Options{Size: size, Scenario: scenario, Variant: Variant{Mode: On}, EDL: bin,
			Dir: filepath.Join(dir, string(scenario)), Progress: &progress})
		t.Logf("%s progress:\n%s", scenario, progress.String())
		require.NoError(t, err)
		results[scenario] = res

		require.NotEmpty(t, res.Samples)
		assert.Greater(t, res.Samples[len(res.Samples)-1].CPUAllocMilli, int64(0), "the samples see the nodes")
		wantJobs := map[Scenario]int{Training: size.Jobs, Shared: size.SharedJobs}[scenario]
		require.Len(t, res.Jobs, wantJobs)
		for _, j := range res.Jobs {
			assert.GreaterOrEqual(t, j.Running, j.Submitted, "with EDL job %s reached phase Running", j.Name)
		}
		grew := false
		for _, s := range res.Samples {
			for _, j := range s.Jobs {
				grew = grew || j.Running > j.Min
			}
		}
		assert.True(t, grew, "with EDL some job ran more than its minimum of trainers")
		assert.Positive(t, res.Scalings, "edl logged its scalings")
		assert.Equal(t, len(res.Steps), strings.Count(progress.String(), " t="), "one progress line per step")

		paths, err := WriteCSV(filepath.Join(dir, "out"), res)
		require.NoError(t, err)
		samples := readCSV(t, paths[0])
		assert.Equal(t, "t_s", samples[0][0])
		assert.Len(t, samples, len(res.Samples)+1, "a row per sample")
	}
	assert.Positive(t, Summarize(results[Shared]).WebPods, "web pods were created during the wave and timed")

	for _, scenario := range []Scenario{Training, Shared} {
		path, err := PlotScenario(filepath.Join(dir, "out"), scenario, []*Result{results[scenario]})
		require.NoError(t, err)
		f, err := os.Open(path)
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err, "%s is a PNG", path)
		assert.Greater(t, cfg.Height, cfg.Width/2, "the panels are stacked")
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}
