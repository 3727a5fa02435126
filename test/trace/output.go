package trace

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// SummaryHeader are the columns of summary.csv.
var SummaryHeader = []string{"workload", "policy", "avg_jct", "p50_jct", "p99_jct", "makespan", "utilization", "resizes_per_job_hour"}

// JobsHeader are the columns of jobs.csv.
var JobsHeader = []string{"workload", "policy", "job", "arrival", "start", "end", "jct", "resizes"}

// WriteSummary writes dir/summary.csv: a row per run, in the order given.
func WriteSummary(dir string, sums []Summary) (string, error) {
	rows := [][]string{SummaryHeader}
	for _, s := range sums {
		rows = append(rows, []string{s.Workload, s.Policy, sec(s.AvgJCT), sec(s.P50JCT), sec(s.P99JCT), sec(s.Makespan),
			strconv.FormatFloat(s.Utilization, 'f', 4, 64), strconv.FormatFloat(s.ResizesPerJobHour, 'f', 4, 64)})
	}
	return writeCSV(filepath.Join(dir, "summary.csv"), rows)
}

// WriteJobs writes dir/jobs.csv: a row per job of every run, in the runs'
// order and the jobs' order of arrival.
func WriteJobs(dir string, runs []*Result) (string, error) {
	rows := [][]string{JobsHeader}
	for _, r := range runs {
		for _, j := range r.Jobs {
			rows = append(rows, []string{r.Workload, r.Policy, j.Name, sec(j.Arrival), sec(j.Start), sec(j.End), sec(j.JCT()),
				strconv.Itoa(j.Resizes)})
		}
	}
	return writeCSV(filepath.Join(dir, "jobs.csv"), rows)
}

// sec renders seconds to a tenth.
func sec(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// writeCSV writes rows to path and returns it.
func writeCSV(path string, rows [][]string) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
