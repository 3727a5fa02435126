package trace

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Application is one model of the trace, read from its directory: how
// long its steps take at each placement and local batch
// ([Application.StepTime]), which local batches were measured, and how many
// steps it needs to reach its target at a global batch
// ([Application.Work]).
type Application struct {
	Name string
	// MinLocal and MaxLocal are the smallest and largest local batches
	// measured, in placements.csv and scalability.csv.
	MinLocal, MaxLocal float64
	steps              stepTimes
	// work is the steps to the target, by global batch, ascending.
	work []workPoint
}

// workPoint is the steps to the target at a global batch.
type workPoint struct{ batch, steps float64 }

// LoadApplications reads every application of a traces directory, one
// subdirectory each, by name.
func LoadApplications(dir string) (map[string]*Application, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	apps := map[string]*Application{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		a, err := LoadApplication(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		apps[a.Name] = a
	}
	if len(apps) == 0 {
		return nil, fmt.Errorf("%s: no application directories", dir)
	}
	return apps, nil
}

// LoadApplication reads the application of a directory: its
// placements.csv, scalability.csv and validation-<batch>.csv files.
func LoadApplication(dir string) (*Application, error) {
	a := &Application{Name: filepath.Base(dir)}
	m := newMeasurements()
	if err := m.readPlacements(filepath.Join(dir, "placements.csv")); err != nil {
		return nil, err
	}
	if err := m.readScalability(filepath.Join(dir, "scalability.csv")); err != nil {
		return nil, err
	}
	a.steps, a.MinLocal, a.MaxLocal = m.stepTimes(), m.minLocal, m.maxLocal
	var err error
	if a.work, err = readValidation(dir); err != nil {
		return nil, err
	}
	return a, nil
}

// StepTime is the timing of one step on a placement — the replicas on each
// node used, in any order — at a local batch ([curve.at], [stepTimes.at]).
func (a *Application) StepTime(placement []int, local float64) Timing {
	return a.steps.at(placement, local)
}

// Trainers are the fewest and the most trainers that split a global batch
// into local batches between MinLocal and MaxLocal; min > max when none
// does.
func (a *Application) Trainers(batch float64) (lo, hi int32) {
	const slack = 1e-9 // a batch that divides exactly is not rounded away
	fewest := math.Max(1, math.Ceil(batch/a.MaxLocal-slack))
	most := math.Floor(batch/a.MinLocal + slack)
	return clampInt32(fewest), clampInt32(most)
}

// Work is the steps the application needs to reach its target at a global
// batch: the iterations of the last epoch every validation file has, at
// the batch of a file, and linear between the two files around any other
// batch, as Pollux's simulator reads them (get_iteration at its
// completion epoch, max_epochs - 1).
func (a *Application) Work(batch float64) (float64, error) {
	w := a.work
	if batch < w[0].batch || batch > w[len(w)-1].batch {
		return 0, fmt.Errorf("application %s: batch size %g outside its validation files' %g to %g", a.Name, batch, w[0].batch, w[len(w)-1].batch)
	}
	i, found := slices.BinarySearchFunc(w, batch, func(p workPoint, b float64) int { return cmp.Compare(p.batch, b) })
	if found {
		return w[i].steps, nil
	}
	lo, hi := w[i-1], w[i]
	return lo.steps + (batch-lo.batch)/(hi.batch-lo.batch)*(hi.steps-lo.steps), nil
}

// Batches are the global batches of the application's validation files,
// ascending.
func (a *Application) Batches() []float64 {
	out := make([]float64, len(a.work))
	for i, w := range a.work {
		out[i] = w.batch
	}
	return out
}

// readValidation reads the validation-<batch>.csv files of an application
// directory and returns the steps to the target at each batch: the
// iteration of the last epoch all the files have.
func readValidation(dir string) ([]workPoint, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "validation-*.csv"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("%s: no validation-<batch size>.csv files", dir)
	}
	tables := make([]*table, len(paths))
	batches := make([]float64, len(paths))
	epochs := math.MaxInt
	for i, p := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "validation-"), ".csv")
		b, err := strconv.Atoi(name)
		if err != nil || b < 1 {
			return nil, fmt.Errorf("%s: the name's batch size %q is not a whole number of at least 1", p, name)
		}
		if tables[i], err = readTable(p, "progress", "iteration", "metric", "grad_sqr", "grad_var"); err != nil {
			return nil, err
		}
		batches[i], epochs = float64(b), min(epochs, len(tables[i].rows))
	}
	work := make([]workPoint, len(paths))
	for i, t := range tables {
		r := t.row(epochs - 1)
		work[i] = workPoint{batch: batches[i], steps: r.positive(1)}
		if r.err != nil {
			return nil, r.err
		}
	}
	slices.SortFunc(work, func(a, b workPoint) int { return cmp.Compare(a.batch, b.batch) })
	return work, nil
}

// measurements gathers the step times read, to average those of one
// placement or size and local batch.
type measurements struct {
	placements         map[string]map[float64][]Timing
	sizes              map[size]map[float64][]Timing
	minLocal, maxLocal float64
}

// newMeasurements holds no measurement yet.
func newMeasurements() *measurements {
	return &measurements{placements: map[string]map[float64][]Timing{}, sizes: map[size]map[float64][]Timing{},
		minLocal: math.Inf(1), maxLocal: math.Inf(-1)}
}

// readPlacements reads placements.csv: placement, local_bsz, step_time,
// sync_time.
func (m *measurements) readPlacements(path string) error {
	t, err := readTable(path, "placement", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return err
	}
	for i := range t.rows {
		r := t.row(i)
		placement, perr := parsePlacement(r.text(0))
		if perr != nil {
			r.fail(0, "a digit from 1 to 9 per node")
		}
		local, tm := r.positive(1), Timing{Step: r.positive(2), Sync: r.nonNegative(3)}
		if r.err != nil {
			return r.err
		}
		key, nodes, replicas := canonical(placement)
		m.add(key, size{nodes, replicas}, local, tm)
	}
	return nil
}

// readScalability reads scalability.csv: num_nodes, num_replicas,
// local_bsz, step_time, sync_time.
func (m *measurements) readScalability(path string) error {
	t, err := readTable(path, "num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return err
	}
	for i := range t.rows {
		r := t.row(i)
		nodes, replicas := int(r.count(0)), int(r.count(1))
		if r.err == nil && replicas < nodes {
			r.fail(1, "fewer replicas than nodes (%d)", nodes)
		}
		local, tm := r.positive(2), Timing{Step: r.positive(3), Sync: r.nonNegative(4)}
		if r.err != nil {
			return r.err
		}
		m.add("", size{nodes, replicas}, local, tm)
	}
	return nil
}

// add records one measurement of a size and, unless placement is "", of
// that placement.
func (m *measurements) add(placement string, s size, local float64, t Timing) {
	into := func(c map[float64][]Timing) { c[local] = append(c[local], t) }
	if placement != "" {
		if m.placements[placement] == nil {
			m.placements[placement] = map[float64][]Timing{}
		}
		into(m.placements[placement])
	}
	if m.sizes[s] == nil {
		m.sizes[s] = map[float64][]Timing{}
	}
	into(m.sizes[s])
	m.minLocal, m.maxLocal = math.Min(m.minLocal, local), math.Max(m.maxLocal, local)
}

// stepTimes are the measurements averaged into curves.
func (m *measurements) stepTimes() stepTimes {
	s := stepTimes{placements: map[string]curve{}, sizes: map[size]curve{}, replicas: map[int][]int{}}
	for key, c := range m.placements {
		s.placements[key] = curveOf(c)
	}
	for sz, c := range m.sizes {
		s.sizes[sz] = curveOf(c)
		if len(s.replicas[sz.nodes]) == 0 {
			s.nodes = append(s.nodes, sz.nodes)
		}
		s.replicas[sz.nodes] = append(s.replicas[sz.nodes], sz.replicas)
	}
	slices.Sort(s.nodes)
	for _, rs := range s.replicas {
		slices.Sort(rs)
	}
	return s
}

// curveOf is the mean timing of each local batch, by local batch.
func curveOf(byLocal map[float64][]Timing) curve {
	c := make(curve, 0, len(byLocal))
	for local, ts := range byLocal {
		var sum Timing
		for _, t := range ts {
			sum.Step, sum.Sync = sum.Step+t.Step, sum.Sync+t.Sync
		}
		n := float64(len(ts))
		c = append(c, point{local: local, t: Timing{Step: sum.Step / n, Sync: sum.Sync / n}})
	}
	slices.SortFunc(c, func(a, b point) int { return cmp.Compare(a.local, b.local) })
	return c
}

// clampInt32 is x, a whole number, clamped to [0, MaxInt32].
func clampInt32(x float64) int32 {
	return int32(math.Min(math.Max(x, 0), math.MaxInt32))
}

// int32of is n clamped to [0, MaxInt32]: a count of trainers, nodes or
// GPUs.
func int32of(n int) int32 {
	return int32(min(max(n, 0), math.MaxInt32)) // #nosec G115 -- clamped to [0, MaxInt32]
}
