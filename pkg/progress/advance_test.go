package progress

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func report(done int64, at time.Duration, run string) Report {
	return Report{Done: done, Total: 1_000_000, Unit: UnitSamples, Batch: 1000, Time: t0.Add(at), Run: run}
}

// TestAdvanceMeasuresEachSizeAndTheRestart: reports of one run at one size
// measure its throughput, the run's first interval (its warm-up) left out;
// a restart at a new size measures its cost, not a throughput; the ETA
// follows the size's throughput.
func TestAdvanceMeasuresEachSizeAndTheRestart(t *testing.T) {
	one := Size{Trainers: 1, Nodes: 1, Desired: 1}
	s := Advance(nil, report(0, 0, "a"), one)
	assert.Empty(t, s.Measured, "one report measures nothing")
	s = Advance(s, report(1000, 10*time.Second, "a"), one)
	assert.Empty(t, s.Measured, "the run's first interval is its warm-up")
	assert.True(t, s.Warm)
	s = Advance(s, report(2000, 20*time.Second, "a"), one)
	require.Len(t, s.Measured, 1)
	assert.Equal(t, v1.SizeThroughput{Trainers: 1, Nodes: 1, Work: 1000, Millis: 10000}, s.Measured[0])
	assert.Equal(t, "100/s", s.Throughput)
	assert.Equal(t, int32(0), *s.Percent)
	// 998,000 samples left at 100/s.
	assert.Equal(t, t0.Add(20*time.Second+9980*time.Second), s.FinishesAt.Time)

	// Resized to 2: the new run's first report comes 40 s after the last,
	// with 500 samples lost since the last checkpoint.
	two := Size{Trainers: 2, Nodes: 2, Desired: 2}
	s = Advance(s, report(1500, 60*time.Second, "b"), two)
	require.Len(t, s.Measured, 1, "the restart measures no throughput")
	require.NotNil(t, s.RestartCost)
	// Priced at the model's optimistic 200/s at 2: 40 s + 500/200 s.
	assert.Equal(t, 43*time.Second, s.RestartCost.Duration)
	assert.False(t, s.Warm)
	s = Advance(s, report(3300, 70*time.Second, "b"), two)
	require.Len(t, s.Measured, 1, "warming up")
	s = Advance(s, report(5100, 80*time.Second, "b"), two)
	require.Len(t, s.Measured, 2)
	assert.Equal(t, v1.SizeThroughput{Trainers: 2, Nodes: 2, Work: 1800, Millis: 10000}, s.Measured[1])
	assert.Equal(t, "180/s", s.Throughput)

	// The same report again changes nothing but the ETA's size: a resize
	// to 3 under way adds the restart's cost.
	same := Advance(s, report(5100, 80*time.Second, "b"), two)
	assert.Equal(t, s, same)
	growing := Advance(s, report(5100, 80*time.Second, "b"), Size{Trainers: 2, Nodes: 2, Desired: 3})
	thr3, basis := Throughput(s, 3, 2)
	assert.Equal(t, Basis("optimistic"), basis)
	want := 80*time.Second + 43*time.Second + time.Duration(float64(1_000_000-5100)/thr3*float64(time.Second))
	assert.WithinDuration(t, t0.Add(want), growing.FinishesAt.Time, time.Second)

	// A report from a clock behind the last is a new baseline.
	back := Advance(s, report(5200, 75*time.Second, "c"), two)
	assert.Equal(t, s.Measured, back.Measured)
	assert.Equal(t, "c", back.Run)
}

// TestAdvanceETAFollowsTheRun: once the current run has been measured for
// RunMeasured, the throughput and the ETA are its own, not its size's
// over the job's life.
func TestAdvanceETAFollowsTheRun(t *testing.T) {
	size := Size{Trainers: 2, Nodes: 1, Desired: 2}
	var s *v1.ProgressStatus
	at, done := time.Duration(0), int64(0)
	step := func(run string, rate int64) {
		at += 10 * time.Second
		done += rate * 10
		s = Advance(s, Report{Done: done, Total: 10_000_000, Unit: UnitSamples, Trainers: 2, Time: t0.Add(at), Run: run}, size)
	}
	for range 10 {
		step("a", 100) // slow, on a busy node
	}
	at += 30 * time.Second
	s = Advance(s, Report{Done: done, Total: 10_000_000, Unit: UnitSamples, Trainers: 2, Time: t0.Add(at), Run: "b"}, size)
	step("b", 300) // warm-up
	step("b", 300)
	assert.Equal(t, "122/s", s.Throughput, "10 s of run b: the size's figure still, (8×1000 + 3000) / 90 s")
	step("b", 300)
	assert.Equal(t, "300/s", s.Throughput, "20 s of run b: its own")
	left := float64(10_000_000-done) / 300
	assert.WithinDuration(t, t0.Add(at+time.Duration(left*float64(time.Second))), s.FinishesAt.Time, time.Second)
}

// TestAdvanceSameReportAfterTheStatusRoundTrip: the status as the API
// server gives it back (reported to the microsecond) and the same report
// read again measure nothing.
func TestAdvanceSameReportAfterTheStatusRoundTrip(t *testing.T) {
	size := Size{Trainers: 3, Nodes: 1, Desired: 3}
	var s *v1.ProgressStatus
	var r Report
	for i, at := range []string{"1765000000.1234567", "1765000010.1234567"} { // warm, nothing measured yet
		var err error
		r, _, err = Parse(map[string]string{"done": strconv.Itoa(1000 * i), "time": at, "run": "a"})
		require.NoError(t, err)
		s = Advance(s, r, size)
	}
	require.True(t, s.Warm)
	require.Empty(t, s.Measured)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back v1.ProgressStatus
	require.NoError(t, json.Unmarshal(b, &back))
	again := Advance(&back, r, size)
	assert.Empty(t, again.Measured, "the same report measures nothing")
}

// TestAdvanceCoalesced: however many reports the controller misses, the
// ones it sees measure the same throughput.
func TestAdvanceCoalesced(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	size := Size{Trainers: 3, Nodes: 1, Desired: 3}
	var all, some *v1.ProgressStatus
	for i := range 100 {
		at := time.Duration(i) * 10 * time.Second
		r := Report{Done: int64(i) * 2345, Unit: UnitSamples, Trainers: 3, Time: t0.Add(at), Run: "a"}
		all = Advance(all, r, size)
		if i == 0 || i == 99 || rng.IntN(4) == 0 {
			some = Advance(some, r, size)
		}
	}
	assert.Equal(t, all.Measured, some.Measured)
	assert.Equal(t, "234/s", some.Throughput)
}

// TestAdvanceRefitsOnNewSizesAndGrownTime: the model is fitted at a new
// size and when the measured time grew by half (each fit's time at least
// 1.5× the last's), not on every report.
func TestAdvanceRefitsOnNewSizesAndGrownTime(t *testing.T) {
	size := Size{Trainers: 1, Nodes: 1, Desired: 1}
	var s *v1.ProgressStatus
	var fits []int64
	for i := range 40 {
		s = Advance(s, report(int64(i)*1000, time.Duration(i)*10*time.Second, "a"), size)
		if s.Model != nil && (len(fits) == 0 || fits[len(fits)-1] != s.Model.FittedMillis) {
			fits = append(fits, s.Model.FittedMillis)
		}
	}
	assert.Equal(t, []int64{10000, 20000, 30000, 50000, 80000, 120000, 180000, 270000}, fits)
	s = Advance(s, report(40000, 400*time.Second, "b"), Size{Trainers: 2, Nodes: 1, Desired: 2})
	s = Advance(s, report(42000, 410*time.Second, "b"), Size{Trainers: 2, Nodes: 1, Desired: 2})
	s = Advance(s, report(44000, 420*time.Second, "b"), Size{Trainers: 2, Nodes: 1, Desired: 2})
	assert.Equal(t, int32(2), s.Model.Sizes, "a new size is fitted at once")
	assert.Equal(t, int32(2), s.Model.MaxTrainers)
}

// TestAdvanceLearnsAScalingCurve: a job whose throughput follows Pollux's
// model, reporting every 10 s and resized now and then with a restart of
// 30 s, is measured at each size within 1% and its restarts within 1 s; a
// size it has not run at is predicted within 10%.
func TestAdvanceLearnsAScalingCurve(t *testing.T) {
	truth := func(n int32) float64 { // samples/s at n trainers on one node
		step := math.Pow(math.Pow(0.02+0.8/float64(n), 2)+math.Pow(0.1+0.01*float64(n), 2), 0.5)
		if n == 1 {
			step = 0.82
		}
		return 1024 / step
	}
	var s *v1.ProgressStatus
	clock, done := time.Duration(0), 0.0
	run := 0
	for _, n := range []int32{1, 2, 4, 3} {
		run++
		clock += 30 * time.Second
		for i := 0; i < 30; i++ {
			if i > 0 {
				clock += 10 * time.Second
				done += truth(n) * 10
			}
			r := Report{Done: int64(done), Total: 10_000_000, Unit: UnitSamples, Batch: 1024, Trainers: n, Time: t0.Add(clock), Run: string(rune('a' + run))}
			s = Advance(s, r, Size{Trainers: n, Nodes: 1, Desired: n})
		}
		if run > 1 {
			assert.InDelta(t, 30, s.RestartCost.Seconds(), 1, "restart to %d", n)
		}
	}
	for _, n := range []int32{1, 2, 3, 4} {
		thr, basis := Throughput(s, n, 1)
		assert.Equal(t, Measured, basis)
		assert.InEpsilon(t, truth(n), thr, 0.01, "measured at %d", n)
	}
	for _, n := range []int32{5, 6} {
		thr, basis := Throughput(s, n, 1)
		assert.Equal(t, Basis("optimistic"), basis)
		assert.Greater(t, thr, truth(4), "optimistic above the largest measured")
	}
	assert.Less(t, Model(s).FitError, 0.1)
}
