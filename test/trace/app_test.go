package trace

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawRow is one row of placements.csv or scalability.csv as the test reads
// it on its own: the placement's nodes and replicas ("" placement for a
// scalability row), the local batch, the step and sync times.
type rawRow struct {
	placement             string
	nodes, replicas       int
	local, step, syncTime float64
}

// readRaw reads an application's placements.csv and scalability.csv with
// encoding/csv alone, apart from the code under test.
func readRaw(t *testing.T, app string) []rawRow {
	t.Helper()
	var out []rawRow
	for _, file := range []string{"placements.csv", "scalability.csv"} {
		f, err := os.Open(filepath.Join(testData, "traces", app, file))
		require.NoError(t, err)
		recs, err := csv.NewReader(f).ReadAll()
		require.NoError(t, f.Close())
		require.NoError(t, err)
		for _, rec := range recs[1:] {
			num := func(s string) float64 {
				v, err := strconv.ParseFloat(s, 64)
				require.NoError(t, err)
				return v
			}
			if file == "placements.csv" {
				r := rawRow{placement: rec[0], nodes: len(rec[0]), local: num(rec[1]), step: num(rec[2]), syncTime: num(rec[3])}
				for _, c := range rec[0] {
					r.replicas += int(c - '0')
				}
				out = append(out, r)
				continue
			}
			out = append(out, rawRow{nodes: int(num(rec[0])), replicas: int(num(rec[1])), local: num(rec[2]), step: num(rec[3]), syncTime: num(rec[4])})
		}
	}
	return out
}

// digits is a placement string as replicas per node.
func digits(p string) []int {
	out := make([]int, len(p))
	for i, c := range p {
		out[i] = int(c - '0')
	}
	return out
}

// spread is r replicas over n nodes, as evenly as can be.
func spread(n, r int) []int {
	out := make([]int, n)
	for i := range r {
		out[i%n]++
	}
	return out
}

// TestStepTimeAtMeasuredPlacement: at a placement and local batch of
// placements.csv the step time is the file's, whichever node comes
// first.
func TestStepTimeAtMeasuredPlacement(t *testing.T) {
	apps := loadApps(t)
	for name, app := range apps {
		for _, r := range readRaw(t, name) {
			if r.placement == "" {
				continue
			}
			p := digits(r.placement)
			got := app.StepTime(p, r.local)
			assert.InDelta(t, r.step, got.Step, 1e-12, "%s placement %s local %g", name, r.placement, r.local)
			assert.InDelta(t, r.syncTime, got.Sync, 1e-12, "%s placement %s local %g sync", name, r.placement, r.local)
			rotated := append(p[1:], p[0])
			assert.InDelta(t, r.step, app.StepTime(rotated, r.local).Step, 1e-12, "%s placement %s rotated", name, r.placement)
		}
	}
}

// TestStepTimeAtMeasuredSize: at a size of scalability.csv the step time
// is the file's, however the replicas spread over the nodes.
func TestStepTimeAtMeasuredSize(t *testing.T) {
	apps := loadApps(t)
	for name, app := range apps {
		n := 0
		for _, r := range readRaw(t, name) {
			if r.placement != "" {
				continue
			}
			n++
			got := app.StepTime(spread(r.nodes, r.replicas), r.local)
			assert.InDelta(t, r.step, got.Step, 1e-12, "%s %d nodes %d replicas local %g", name, r.nodes, r.replicas, r.local)
		}
		assert.Positive(t, n, "%s has scalability rows", name)
	}
}

// TestStepTimeBetweenMeasurements: a local batch between two measured
// ones lies between their step times, on the line between them; a size between two node counts
// measured lies between the measurements of the sizes around it at the
// same replicas per node.
func TestStepTimeBetweenMeasurements(t *testing.T) {
	apps := loadApps(t)
	for name, app := range apps {
		rows := readRaw(t, name)
		byLocal := map[float64][]rawRow{}
		for _, r := range rows {
			if r.placement == "22" {
				byLocal[r.local] = append(byLocal[r.local], r)
			}
		}
		locals := slices.Sorted(func(yield func(float64) bool) {
			for l := range byLocal {
				if !yield(l) {
					return
				}
			}
		})
		require.GreaterOrEqual(t, len(locals), 2, "%s: local batches of placement 22", name)
		for i := 1; i < len(locals); i++ {
			a, b := byLocal[locals[i-1]][0].step, byLocal[locals[i]][0].step
			mid := app.StepTime([]int{2, 2}, (locals[i-1]+locals[i])/2).Step
			assert.True(t, mid >= math.Min(a, b) && mid <= math.Max(a, b), "%s 22: %g between %g and %g", name, mid, a, b)
			assert.InDelta(t, (a+b)/2, mid, 1e-12, "%s 22: linear between local batches %g and %g", name, locals[i-1], locals[i])
		}
		// 5 nodes of 2 between 4 nodes of 8 replicas and 6 of 12, at a
		// local batch both measured.
		local := locals[0]
		var around []float64
		for _, r := range rows {
			if r.local == local && ((r.nodes == 4 && r.replicas == 8) || (r.nodes == 6 && r.replicas == 12)) {
				around = append(around, r.step)
			}
		}
		require.NotEmpty(t, around, "%s: sizes 4×8 and 6×12 at local %g", name, local)
		got := app.StepTime(spread(5, 10), local).Step
		assert.True(t, got >= slices.Min(around) && got <= slices.Max(around), "%s 5 nodes of 2: %g outside %v", name, got, around)
	}
}

// TestStepTimeAboveMeasured: a local batch twice the largest measured
// runs as two micro-batches of the largest: one synchronisation, and the
// second costs the step less its synchronisation.
func TestStepTimeAboveMeasured(t *testing.T) {
	apps := loadApps(t)
	for name, app := range apps {
		var top rawRow
		for _, r := range readRaw(t, name) {
			if r.placement == "1" && r.local > top.local {
				top = r
			}
		}
		got := app.StepTime([]int{1}, 2*top.local)
		assert.InDelta(t, 2*top.step-top.syncTime, got.Step, 1e-9, "%s at twice local %g", name, top.local)
		assert.InDelta(t, top.syncTime, got.Sync, 1e-12, name)
	}
}

// TestLocalBounds: MinLocal and MaxLocal are the smallest and largest
// local batches of the two files, and Trainers the fewest and most
// trainers whose local batch lies between them.
func TestLocalBounds(t *testing.T) {
	apps := loadApps(t)
	for name, app := range apps {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range readRaw(t, name) {
			lo, hi = math.Min(lo, r.local), math.Max(hi, r.local)
		}
		assert.Equal(t, lo, app.MinLocal, name)
		assert.Equal(t, hi, app.MaxLocal, name)
		for _, batch := range app.Batches() {
			fewest, most := app.Trainers(batch)
			if most < fewest {
				assert.Less(t, batch, app.MinLocal, "%s batch %g: no trainer count", name, batch)
				continue
			}
			within := func(r int32) bool {
				l := batch / float64(r)
				return l >= app.MinLocal-1e-9 && l <= app.MaxLocal+1e-9
			}
			assert.True(t, within(fewest) && within(most), "%s batch %g: %d and %d", name, batch, fewest, most)
			assert.False(t, fewest > 1 && within(fewest-1), "%s batch %g: %d trainers would do", name, batch, fewest-1)
			assert.False(t, within(most+1), "%s batch %g: %d trainers would do", name, batch, most+1)
		}
	}
}

// TestWork: at a validation file's batch the work is the iteration of the
// last epoch every file has, and between two files' batches it is linear.
func TestWork(t *testing.T) {
	apps := loadApps(t)
	for name, app := range apps {
		paths, err := filepath.Glob(filepath.Join(testData, "traces", name, "validation-*.csv"))
		require.NoError(t, err)
		iters := map[float64][]string{}
		epochs := math.MaxInt
		for _, p := range paths {
			f, err := os.Open(p)
			require.NoError(t, err)
			recs, err := csv.NewReader(f).ReadAll()
			require.NoError(t, f.Close())
			require.NoError(t, err)
			batch, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "validation-"), ".csv"), 64)
			require.NoError(t, err)
			for _, rec := range recs[1:] {
				iters[batch] = append(iters[batch], rec[1])
			}
			epochs = min(epochs, len(recs)-1)
		}
		batches := app.Batches()
		require.Len(t, batches, len(paths), name)
		for i, b := range batches {
			want, err := strconv.ParseFloat(iters[b][epochs-1], 64)
			require.NoError(t, err)
			got, err := app.Work(b)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s batch %g", name, b)
			if i == 0 {
				continue
			}
			prev, _ := app.Work(batches[i-1])
			mid, err := app.Work((batches[i-1] + b) / 2)
			require.NoError(t, err)
			assert.InDelta(t, (prev+got)/2, mid, 1e-9, "%s between %g and %g", name, batches[i-1], b)
		}
		_, err = app.Work(batches[len(batches)-1] * 2)
		assert.ErrorContains(t, err, name, "a batch above every file's")
	}
}
