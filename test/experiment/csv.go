package experiment

import (
	"encoding/csv"
	"fmt"
	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteCSV writes the run's samples, and its jobs' and web pods' timings, as
// <scenario>-<mode>-{samples,jobs,web}.csv into dir; it returns the paths.
func WriteCSV(dir string, r *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%s", r.Scenario, r.Variant.Label()))
	var paths []string
	write := func(suffix string, rows [][]string) error {
		path := base + "-" + suffix + ".csv"
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		w := csv.NewWriter(f)
		if err := w.WriteAll(rows); err != nil {
			f.Close()
			return err
		}
		paths = append(paths, path)
		return f.Close()
	}
	sec := func(d time.Duration) string {
		if d < 0 {
			return ""
		}
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64)
	}
	ratio := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	itoa := strconv.Itoa

	names := jobNames(r)
	header := []string{"t_s", "utilization", "ideal", "load", "cpu_running_milli", "cpu_pending_milli", "cpu_allocatable_milli", "jobs_submitted", "jobs_pending",
		"trainers_running", "web_desired", "web_running", "web_pending", "pods_pending", "cpu_held_waiting_milli", "ideal_around", "ideal_trainers",
		"useful", "cpu_deleting_milli", heldColumn(v1.RoleMaster), heldColumn(v1.RolePserver), heldColumn(v1.RoleTrainer), "in_window", "ideal_fixed"}
	for _, n := range names {
		header = append(header, "trainers_"+n)
	}
	pools := poolNames(r)
	for _, p := range pools {
		for _, col := range poolColumns {
			header = append(header, p+"_"+col.name)
		}
	}
	teams := teamNames(r)
	if len(teams) > 0 {
		header = append(header, "jobs_live", "orphan_trainers", "orphan_pservers")
	}
	for _, t := range teams {
		for _, col := range teamColumns {
			header = append(header, "team_"+t+"_"+col.name)
		}
	}
	rows := [][]string{header}
	for _, s := range r.Samples {
		load := 0.0
		if s.CPUAllocMilli > 0 {
			load = float64(s.CPURunningMilli+s.CPUPendingMilli) / float64(s.CPUAllocMilli)
		}
		row := []string{sec(s.At), ratio(s.Utilization), ratio(s.Ideal), ratio(load), strconv.FormatInt(s.CPURunningMilli, 10),
			strconv.FormatInt(s.CPUPendingMilli, 10), strconv.FormatInt(s.CPUAllocMilli, 10), itoa(s.Submitted), itoa(s.PendingJobs), itoa(s.RunningTrainers),
			itoa(s.WebDesired), itoa(s.WebRunning), itoa(s.WebPending), itoa(s.PendingPods), strconv.FormatInt(s.CPUHeldWaitingMilli, 10), ratio(s.IdealAround), ratio(s.IdealTrainers),
			ratio(s.Useful()), strconv.FormatInt(s.CPUDeletingMilli, 10), strconv.FormatInt(s.HeldWaiting.Master, 10),
			strconv.FormatInt(s.HeldWaiting.Pserver, 10), strconv.FormatInt(s.HeldWaiting.Trainer, 10), strconv.FormatBool(s.At >= r.WindowStart), ratio(s.IdealFixed)}
		running := map[string]int{}
		for _, j := range s.Jobs {
			running[j.Name] = j.Running
		}
		for _, n := range names {
			row = append(row, itoa(running[n]))
		}
		for _, name := range pools {
			var p PoolSample
			for _, x := range s.Pools {
				if x.Name == name {
					p = x
				}
			}
			for _, col := range poolColumns {
				row = append(row, col.format(p))
			}
		}
		if len(teams) > 0 {
			row = append(row, itoa(s.LiveJobs), itoa(s.OrphanTrainers), itoa(s.OrphanPservers))
		}
		for _, name := range teams {
			var t TeamSample
			for _, x := range s.Teams {
				if x.Name == name {
					t = x
				}
			}
			for _, col := range teamColumns {
				row = append(row, col.format(t))
			}
		}
		rows = append(rows, row)
	}
	if err := write("samples", rows); err != nil {
		return nil, err
	}

	rows = [][]string{{"job", "submitted_s", "first_trainer_s", "running_s", "pending_s", "never_running"}}
	for _, j := range r.Jobs {
		end, never := j.Running, j.Running < 0
		if never {
			end = r.End
		}
		rows = append(rows, []string{j.Name, sec(j.Submitted), sec(j.FirstTrainer), sec(j.Running), sec(end - j.Submitted), strconv.FormatBool(never)})
	}
	if err := write("jobs", rows); err != nil {
		return nil, err
	}

	if len(r.Growth) > 0 {
		rows = [][]string{{"pod", "job", "pool", "created_s", "bound_s", "deleted_s", "wait_s"}}
		for _, w := range r.Growth {
			rows = append(rows, []string{w.Pod, w.Job, w.Pool, sec(w.Created), sec(w.Bound), sec(w.Deleted), sec(w.Wait(r.End))})
		}
		if err := write("growth", rows); err != nil {
			return nil, err
		}
	}

	if len(r.Bursts) > 0 {
		rows = [][]string{{"team", "submitted_s", "ended_s", "reclaiming", "jobs"}}
		for _, b := range r.Bursts {
			rows = append(rows, []string{b.Team, sec(b.At), sec(b.End), strconv.FormatBool(b.Reclaiming), strings.Join(b.Jobs, " ")})
		}
		if err := write("bursts", rows); err != nil {
			return nil, err
		}
	}

	if r.Scenario == Shared || r.Scenario == Pools {
		rows = [][]string{{"pod", "created_s", "running_s", "deleted_s", "wait_s", "in_window"}}
		for _, w := range r.Web {
			wait := ""
			switch {
			case w.Running >= 0:
				wait = sec(w.Running - w.Created)
			case w.Deleted < 0:
				wait = sec(r.End - w.Created)
			}
			rows = append(rows, []string{w.Name, sec(w.Created), sec(w.Running), sec(w.Deleted), wait, strconv.FormatBool(w.Created >= r.WindowStart)})
		}
		if err := write("web", rows); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// poolColumns are the columns of each pool in the samples CSV, named
// <pool>_<name>; utilization is derived, for the reader of the CSV.
var poolColumns = []struct {
	name   string
	format func(PoolSample) string
	parse  func(*PoolSample, float64)
}{
	{"utilization", func(p PoolSample) string { return strconv.FormatFloat(p.Utilization(), 'f', 4, 64) }, func(*PoolSample, float64) {}},
	{"ideal", func(p PoolSample) string { return strconv.FormatFloat(p.Ideal, 'f', 4, 64) }, func(p *PoolSample, v float64) { p.Ideal = v }},
	{"ideal_around", func(p PoolSample) string { return strconv.FormatFloat(p.IdealAround, 'f', 4, 64) },
		func(p *PoolSample, v float64) { p.IdealAround = v }},
	{"ideal_trainers", func(p PoolSample) string { return strconv.FormatFloat(p.IdealTrainers, 'f', 4, 64) },
		func(p *PoolSample, v float64) { p.IdealTrainers = v }},
	{"ideal_fixed", func(p PoolSample) string { return strconv.FormatFloat(p.IdealFixed, 'f', 4, 64) },
		func(p *PoolSample, v float64) { p.IdealFixed = v }},
	{"useful", func(p PoolSample) string { return strconv.FormatFloat(p.Useful(), 'f', 4, 64) }, func(*PoolSample, float64) {}},
	{"nodes", func(p PoolSample) string { return strconv.Itoa(p.Nodes) }, func(p *PoolSample, v float64) { p.Nodes = int(v) }},
	{"cpu_running_milli", func(p PoolSample) string { return strconv.FormatInt(p.CPURunningMilli, 10) },
		func(p *PoolSample, v float64) { p.CPURunningMilli = int64(v) }},
	{"cpu_allocatable_milli", func(p PoolSample) string { return strconv.FormatInt(p.CPUAllocMilli, 10) },
		func(p *PoolSample, v float64) { p.CPUAllocMilli = int64(v) }},
	{"gpu_running", func(p PoolSample) string { return strconv.FormatInt(p.GPURunning, 10) }, func(p *PoolSample, v float64) { p.GPURunning = int64(v) }},
	{"gpu_allocatable", func(p PoolSample) string { return strconv.FormatInt(p.GPUAlloc, 10) }, func(p *PoolSample, v float64) { p.GPUAlloc = int64(v) }},
	{"cpu_held_waiting_milli", func(p PoolSample) string { return strconv.FormatInt(p.CPUHeldWaitingMilli, 10) },
		func(p *PoolSample, v float64) { p.CPUHeldWaitingMilli = int64(v) }},
	{"gpu_held_waiting", func(p PoolSample) string { return strconv.FormatInt(p.GPUHeldWaiting, 10) },
		func(p *PoolSample, v float64) { p.GPUHeldWaiting = int64(v) }},
}

// teamColumns are the columns of each team in the samples CSV, named
// team_<team>_<name>.
var teamColumns = []struct {
	name   string
	format func(TeamSample) string
	parse  func(*TeamSample, float64)
}{
	{"cpu_running_milli", func(t TeamSample) string { return strconv.FormatInt(t.CPURunningMilli, 10) },
		func(t *TeamSample, v float64) { t.CPURunningMilli = int64(v) }},
	{"demand_milli", func(t TeamSample) string { return strconv.FormatInt(t.DemandMilli, 10) },
		func(t *TeamSample, v float64) { t.DemandMilli = int64(v) }},
	{"fair_milli", func(t TeamSample) string { return strconv.FormatFloat(t.FairMilli, 'f', 0, 64) },
		func(t *TeamSample, v float64) { t.FairMilli = v }},
	{"trainers", func(t TeamSample) string { return strconv.Itoa(t.Trainers) }, func(t *TeamSample, v float64) { t.Trainers = int(v) }},
	{"deserved_milli", func(t TeamSample) string { return strconv.FormatInt(t.DeservedMilli, 10) },
		func(t *TeamSample, v float64) { t.DeservedMilli = int64(v) }},
}

// teamNames are the names of every team seen in the samples, sorted.
func teamNames(r *Result) []string {
	seen := map[string]bool{}
	for _, s := range r.Samples {
		for _, t := range s.Teams {
			seen[t.Name] = true
		}
	}
	names := slices.Collect(maps.Keys(seen))
	slices.Sort(names)
	return names
}

// poolNames are the names of every pool seen in the samples, sorted.
func poolNames(r *Result) []string {
	seen := map[string]bool{}
	for _, s := range r.Samples {
		for _, p := range s.Pools {
			seen[p.Name] = true
		}
	}
	names := slices.Collect(maps.Keys(seen))
	slices.Sort(names)
	return names
}

// jobNames are the names of every job seen in the samples, sorted.
func jobNames(r *Result) []string {
	seen := map[string]bool{}
	for _, j := range r.Jobs {
		seen[j.Name] = true
	}
	for _, s := range r.Samples {
		for _, j := range s.Jobs {
			seen[j.Name] = true
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
