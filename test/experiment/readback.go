package experiment

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// ReadResult reads back what WriteCSV wrote for one run: its samples (with
// the trainers Running per job) and its jobs' timings, enough to draw its
// figure again and to average its samples over its window.
//
// Samples CSVs without the columns in_window and cpu_held_waiting_<role>_milli
// get them derived: the window starts at the first sample of Shared and
// Pools in which every job submitted runs (0 in Training), and the CPU the
// waiting jobs hold is split as the trainers Running of the jobs not yet
// Running at the sample (by the jobs CSV) and the rest, their pservers (the
// experiments' masters request nothing); HeldDerived says so. Without the
// column ideal_fixed the bound of what EDL cannot influence is derived as
// an upper bound of it (FixedDerived): until the web service's first
// up-step every web pod bound was placed before the first job, so it is
// the bound with the web pods where they run; from that step on it is the
// ideal.
func ReadResult(dir string, scenario Scenario, variant Variant) (*Result, error) {
	base := filepath.Join(dir, fmt.Sprintf("%s-%s", scenario, variant.Label()))
	rows, err := readRows(base + "-samples.csv")
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	var pools, teams []string
	for i, name := range rows[0] {
		col[name] = i
		if pool, ok := strings.CutSuffix(name, "_"+poolColumns[0].name); ok {
			pools = append(pools, pool)
		}
		if team, ok := strings.CutPrefix(name, "team_"); ok {
			if team, ok = strings.CutSuffix(team, "_"+teamColumns[0].name); ok {
				teams = append(teams, team)
			}
		}
	}
	r := &Result{Scenario: scenario, Variant: variant, WindowStart: -1}
	if jobs, err := readRows(base + "-jobs.csv"); err == nil {
		r.Jobs = jobTimings(jobs)
	}
	if bursts, err := readRows(base + "-bursts.csv"); err == nil {
		r.Bursts = readBursts(bursts)
	}
	_, hasRoles := col[heldColumn(v1.RoleTrainer)]
	_, hasWindow := col["in_window"]
	_, hasFixed := col["ideal_fixed"]
	r.HeldDerived, r.FixedDerived = !hasRoles, !hasFixed
	upStep := false // a web up-step seen: derived fixed bounds are the ideal
	for _, row := range rows[1:] {
		str := func(name string) string {
			if i, ok := col[name]; ok && i < len(row) {
				return row[i]
			}
			return ""
		}
		num := func(name string) float64 {
			v, _ := strconv.ParseFloat(str(name), 64)
			return v
		}
		s := Sample{
			At:              time.Duration(num("t_s") * float64(time.Second)),
			Utilization:     num("utilization"),
			Ideal:           num("ideal"),
			CPURunningMilli: int64(num("cpu_running_milli")),
			CPUPendingMilli: int64(num("cpu_pending_milli")),
			CPUAllocMilli:   int64(num("cpu_allocatable_milli")),
			Submitted:       int(num("jobs_submitted")),
			PendingJobs:     int(num("jobs_pending")),
			RunningTrainers: int(num("trainers_running")),
			WebDesired:      int(num("web_desired")),
			WebRunning:      int(num("web_running")),
			WebPending:      int(num("web_pending")),
			PendingPods:     int(num("pods_pending")),

			CPUHeldWaitingMilli: int64(num("cpu_held_waiting_milli")),
			CPUDeletingMilli:    int64(num("cpu_deleting_milli")),
			HeldWaiting: RoleMilli{Master: int64(num(heldColumn(v1.RoleMaster))), Pserver: int64(num(heldColumn(v1.RolePserver))),
				Trainer: int64(num(heldColumn(v1.RoleTrainer)))},
			IdealAround:   num("ideal_around"),
			IdealTrainers: num("ideal_trainers"),
		}
		for name, i := range col {
			if job, ok := strings.CutPrefix(name, "trainers_"); ok && name != "trainers_running" && i < len(row) {
				n, _ := strconv.Atoi(row[i])
				s.Jobs = append(s.Jobs, JobView{Name: job, Running: n})
			}
		}
		slices.SortFunc(s.Jobs, func(a, b JobView) int { return strings.Compare(a.Name, b.Name) })
		for _, pool := range pools {
			p := PoolSample{Name: pool}
			for _, c := range poolColumns {
				c.parse(&p, num(pool+"_"+c.name))
			}
			s.Pools = append(s.Pools, p)
		}
		for _, team := range teams {
			t := TeamSample{Name: team}
			for _, c := range teamColumns {
				c.parse(&t, num("team_"+team+"_"+c.name))
			}
			s.Teams = append(s.Teams, t)
		}
		s.LiveJobs, s.OrphanTrainers, s.OrphanPservers = int(num("jobs_live")), int(num("orphan_trainers")), int(num("orphan_pservers"))
		if !hasRoles {
			s.HeldWaiting = deriveHeld(s, r.Jobs)
		}
		if n := len(r.Samples); n > 0 && r.Samples[n-1].WebDesired > 0 && s.WebDesired > r.Samples[n-1].WebDesired {
			upStep = true
		}
		if !hasFixed {
			deriveFixed(&s, upStep)
		} else {
			s.IdealFixed = num("ideal_fixed")
		}
		inWindow := str("in_window") == "true"
		if !hasWindow {
			inWindow = scenario == Training || (s.Submitted > 0 && s.PendingJobs == 0)
		}
		if inWindow && r.WindowStart < 0 {
			r.WindowStart = s.At
		}
		r.Samples = append(r.Samples, s)
	}
	if n := len(r.Samples); n > 0 {
		r.End = r.Samples[n-1].At
	}
	r.WindowStart = max(r.WindowStart, 0)
	return r, nil
}

// deriveHeld splits what the waiting jobs hold at s: the trainers Running
// of the jobs submitted and not yet Running at s, the rest their pservers.
func deriveHeld(s Sample, jobs []JobTiming) RoleMilli {
	var m RoleMilli
	for _, j := range jobs {
		if j.Submitted > s.At || (j.Running >= 0 && j.Running <= s.At) {
			continue
		}
		size := TrainerSize
		if strings.HasPrefix(j.Name, "gpu-") {
			size = GPUTrainerSize
		}
		for _, v := range s.Jobs {
			if v.Name == j.Name {
				m.Trainer += int64(v.Running) * size.cpuMilli()
			}
		}
	}
	m.Trainer = min(m.Trainer, s.CPUHeldWaitingMilli)
	m.Pserver = s.CPUHeldWaitingMilli - m.Trainer
	return m
}

// deriveFixed fills in the bounds of what EDL cannot influence of a sample
// whose CSV lacks them: the bound with the web pods where they run until
// the first web up-step, the ideal from it on (an upper bound).
func deriveFixed(s *Sample, upStep bool) {
	fixed := func(ideal, around float64) float64 {
		if upStep {
			return ideal
		}
		return around
	}
	s.IdealFixed = fixed(s.Ideal, s.IdealAround)
	for i := range s.Pools {
		p := &s.Pools[i]
		p.IdealFixed = fixed(p.Ideal, p.IdealAround)
		if p.Resource() == GPU {
			p.IdealFixed = p.Ideal // no web pods there
		}
	}
}

// jobTimings reads the jobs CSV's rows.
func jobTimings(rows [][]string) []JobTiming {
	var out []JobTiming
	for _, row := range rows[1:] {
		if len(row) < 4 {
			continue
		}
		sec := func(v string) time.Duration {
			if v == "" {
				return -1
			}
			f, _ := strconv.ParseFloat(v, 64)
			return time.Duration(f * float64(time.Second))
		}
		out = append(out, JobTiming{Name: row[0], Submitted: sec(row[1]), FirstTrainer: sec(row[2]), Running: sec(row[3])})
	}
	return out
}

// readBursts reads the bursts CSV's rows.
func readBursts(rows [][]string) []Burst {
	var out []Burst
	for _, row := range rows[1:] {
		if len(row) < 5 {
			continue
		}
		sec := func(v string) time.Duration {
			f, _ := strconv.ParseFloat(v, 64)
			return time.Duration(f * float64(time.Second))
		}
		out = append(out, Burst{Team: row[0], At: sec(row[1]), End: sec(row[2]), Reclaiming: row[3] == "true", Jobs: strings.Fields(row[4])})
	}
	return out
}

// readRows reads a CSV file, header included.
func readRows(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return rows, nil
}

// boundColumns are the samples CSV's bounds that hold pods where they run,
// each with the ideal it may not exceed: the whole cluster's, then each
// pool's.
func boundColumns(header []string) map[string]string {
	out := map[string]string{}
	for _, name := range header {
		for _, b := range []string{"ideal_around", "ideal_trainers"} {
			if prefix, ok := strings.CutSuffix(name, b); ok {
				out[name] = prefix + "ideal"
			}
		}
	}
	return out
}

// CapBounds caps, in the samples CSV at path, every bound that holds pods
// where they run at its ideal, sample by sample, and rewrites the file if
// any changed; it returns how many values it changed. The ideal places the
// same demand anywhere, so a bound above it counts what the demand no
// longer has: the web pods of the level before a down-step, still bound.
func CapBounds(path string) (int, error) {
	rows, err := readRows(path)
	if err != nil {
		return 0, err
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	changed := 0
	for _, row := range rows[1:] {
		for bound, ideal := range boundColumns(rows[0]) {
			b, errB := strconv.ParseFloat(row[col[bound]], 64)
			i, errI := strconv.ParseFloat(row[col[ideal]], 64)
			if errB != nil || errI != nil {
				return 0, fmt.Errorf("%s: %s or %s is not a number", path, bound, ideal)
			}
			if b > i {
				row[col[bound]] = row[col[ideal]]
				changed++
			}
		}
	}
	if changed == 0 {
		return 0, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return 0, err
	}
	return changed, f.Close()
}
