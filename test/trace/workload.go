package trace

import (
	"path/filepath"
	"regexp"
	"strings"
)

// JobSpec is one row of a workload file: a training job of 1-GPU
// trainers that keeps its global batch however many trainers it has.
type JobSpec struct {
	// Name is the row's name, unique in its workload.
	Name string
	// Arrival is when the job is submitted, in seconds from the start.
	Arrival float64
	// App is the job's model, the truth the simulated cluster runs it by;
	// only an oracle policy may show it to the planner.
	App *Application
	// Replicas is num_replicas: the static configuration's trainers.
	Replicas int32
	// Batch is batch_size, the global batch.
	Batch float64
	// Work is the steps the job needs to reach its target at Batch.
	Work float64
}

// Workload is the jobs of a workload file, in the file's order.
type Workload struct {
	// Name tells workloads apart in the results ([WorkloadName]).
	Name string
	Jobs []JobSpec
}

// ReadWorkload reads a workload file — columns name, time, application,
// num_replicas, batch_size — whose applications are in apps.
func ReadWorkload(path string, apps map[string]*Application) (Workload, error) {
	t, err := readTable(path, "name", "time", "application", "num_replicas", "batch_size")
	if err != nil {
		return Workload{}, err
	}
	w := Workload{Name: WorkloadName(path), Jobs: make([]JobSpec, 0, len(t.rows))}
	seen := map[string]int{}
	for i := range t.rows {
		r := t.row(i)
		j := JobSpec{Name: r.text(0), Arrival: r.nonNegative(1), App: apps[r.text(2)], Replicas: r.count(3), Batch: r.positive(4)}
		if first, dup := seen[j.Name]; dup && r.err == nil {
			r.fail(0, "the name of line %d too", first)
		}
		if j.App == nil {
			r.fail(2, "no such application in the traces")
		}
		if r.err == nil {
			var werr error
			if j.Work, werr = j.App.Work(j.Batch); werr != nil {
				r.fail(4, "%v", werr)
			}
		}
		if r.err != nil {
			return Workload{}, r.err
		}
		seen[j.Name] = t.lines[i]
		w.Jobs = append(w.Jobs, j)
	}
	return w, nil
}

// loadDir matches the Pollux trace's load directories: workloads-<load>.
var loadDir = regexp.MustCompile(`^workloads-([0-9]+(\.[0-9]+)?)$`)

// WorkloadName is how the results name a workload file: its name without
// .csv, prefixed with the load of its directory — "1.0x-" for the trace's
// workloads/ (1.0× load), "2.0x-" for workloads-2.0/ — so that one
// workload at two loads is told apart; a file in another directory is
// prefixed with that directory's name, and one in the current directory
// with nothing.
func WorkloadName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".csv")
	dir := filepath.Base(filepath.Dir(filepath.Clean(path)))
	switch m := loadDir.FindStringSubmatch(dir); {
	case dir == "workloads":
		return "1.0x-" + base
	case m != nil:
		return m[1] + "x-" + base
	case dir == "." || dir == string(filepath.Separator):
		return base
	}
	return dir + "-" + base
}
