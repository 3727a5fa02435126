package trace

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordDir holds the committed records of experiment 6.
var recordDir = filepath.Join("..", "..", "docs", "experiments", "trace")

// readRecord reads the committed summary.csv: its rows, header first.
func readRecord(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(recordDir, "summary.csv"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, SummaryHeader, rows[0])
	return rows[1:]
}

// TestTracePageIsTheRecord: docs/experiments-trace.md's tables are the
// committed summary.csv — every workload's average JCT per policy, and
// the means of each load — and its plots are committed.
func TestTracePageIsTheRecord(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "experiments-trace.md"))
	require.NoError(t, err)
	rows := readRecord(t)
	policies := []string{"fulfillment", "goodput", "static", "oracle"}
	avg := map[[2]string]string{}
	type sums struct{ n, avg, p99, makespan, util, resizes float64 }
	means := map[[2]string]*sums{}
	var workloads []string
	for _, r := range rows {
		workload, policy := r[0], r[1]
		f := func(col int) float64 {
			v, err := strconv.ParseFloat(r[col], 64)
			require.NoError(t, err, "%s %s column %d", workload, policy, col)
			return v
		}
		avg[[2]string{workload, policy}] = fmt.Sprintf("%.0f", f(2))
		if !slices.Contains(workloads, workload) {
			workloads = append(workloads, workload)
		}
		key := [2]string{strings.SplitN(workload, "-", 2)[0], policy}
		if means[key] == nil {
			means[key] = &sums{}
		}
		m := means[key]
		m.n++
		m.avg, m.p99, m.makespan, m.util, m.resizes = m.avg+f(2), m.p99+f(4), m.makespan+f(5), m.util+f(6), m.resizes+f(7)
	}
	require.Len(t, workloads, 10, "five workloads at two loads")
	for _, w := range workloads {
		row := "| " + w
		for _, p := range policies {
			row += " | " + avg[[2]string{w, p}]
		}
		assert.Contains(t, string(page), row+" |", "%s's average JCTs", w)
	}
	for _, load := range []string{"1.0x", "2.0x"} {
		for _, p := range policies {
			m := means[[2]string{load, p}]
			require.NotNil(t, m, "%s %s", load, p)
			row := fmt.Sprintf("| %s | %s | %.0f | %.0f | %.0f | %.3f | %.2f |", load, p, m.avg/m.n, m.p99/m.n, m.makespan/m.n, m.util/m.n, m.resizes/m.n)
			assert.Contains(t, string(page), row, "the means of %s under %s", load, p)
		}
	}
	for _, w := range []string{"1.0x-workload-1", "2.0x-workload-1"} {
		assert.FileExists(t, filepath.Join(recordDir, "jct-"+w+".png"))
	}
}

// TestTraceReproducesTheRecord: a run of the committed comparison, again,
// gives its committed row: make trace reproduces the record.
func TestTraceReproducesTheRecord(t *testing.T) {
	apps := loadApps(t)
	w, err := ReadWorkload(testWorkload, apps)
	require.NoError(t, err)
	r, err := Run(DefaultConfig(), w, Fulfillment(64))
	require.NoError(t, err)
	s := Summarize(r)
	dir := t.TempDir()
	_, err = WriteSummary(dir, []Summary{s})
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "summary.csv"))
	require.NoError(t, err)
	line := strings.Split(strings.TrimSpace(string(got)), "\n")[1]
	var want string
	for _, row := range readRecord(t) {
		if row[0] == s.Workload && row[1] == "fulfillment" {
			want = strings.Join(row, ",")
		}
	}
	assert.Equal(t, want, line)
}
