package trace

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handResult is a run made up by hand: four jobs of JCTs 100 to 400 s on
// 8 GPUs.
func handResult() *Result {
	return &Result{Workload: "w", Policy: "p", GPUs: 8, GPUSeconds: 1600, Jobs: []JobResult{
		{Name: "a", Arrival: 0, Start: 0, End: 100, Resizes: 1},
		{Name: "b", Arrival: 50, Start: 100, End: 250, Resizes: 0},
		{Name: "c", Arrival: 100, Start: 100, End: 400, Resizes: 2},
		{Name: "d", Arrival: 100, Start: 300, End: 500, Resizes: 3},
	}}
}

// TestSummarize: the figures follow their definitions.
func TestSummarize(t *testing.T) {
	s := Summarize(handResult())
	assert.Equal(t, "w", s.Workload)
	assert.Equal(t, "p", s.Policy)
	// JCTs 100, 200, 300, 400.
	assert.InDelta(t, 250, s.AvgJCT, 1e-9)
	assert.InDelta(t, 200, s.P50JCT, 1e-9, "the smallest JCT half the jobs do not exceed")
	assert.InDelta(t, 400, s.P99JCT, 1e-9)
	assert.InDelta(t, 500, s.Makespan, 1e-9, "first arrival 0 to last end 500")
	assert.InDelta(t, 1600.0/(8*500), s.Utilization, 1e-9)
	// 6 resizes over 100+150+300+200 = 750 s of running.
	assert.InDelta(t, 6/(750.0/3600), s.ResizesPerJobHour, 1e-9)
	assert.Equal(t, Summary{}, Summarize(&Result{}), "no jobs, no figures")
}

// readCSVFile reads a whole CSV file.
func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

// TestWriteResults: summary.csv has exactly its columns and a row per run,
// jobs.csv a row per job, and the plot is a PNG per workload.
func TestWriteResults(t *testing.T) {
	dir := t.TempDir()
	a, b := handResult(), handResult()
	b.Policy = "q"
	runs := []*Result{a, b}
	path, err := WriteSummary(dir, []Summary{Summarize(a), Summarize(b)})
	require.NoError(t, err)
	rows := readCSVFile(t, path)
	require.Len(t, rows, 3)
	assert.Equal(t, []string{"workload", "policy", "avg_jct", "p50_jct", "p99_jct", "makespan", "utilization", "resizes_per_job_hour"}, rows[0])
	assert.Equal(t, []string{"w", "q", "250.0", "200.0", "400.0", "500.0", "0.4000", "28.8000"}, rows[2])

	path, err = WriteJobs(dir, runs)
	require.NoError(t, err)
	rows = readCSVFile(t, path)
	require.Len(t, rows, 1+2*4)
	assert.Equal(t, []string{"workload", "policy", "job", "arrival", "start", "end", "jct", "resizes"}, rows[0])
	assert.Equal(t, []string{"w", "p", "b", "50.0", "100.0", "250.0", "200.0", "0"}, rows[2])

	plots, err := PlotJCT(dir, runs)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "jct-w.png")}, plots)
	png, err := os.ReadFile(plots[0])
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))
}
