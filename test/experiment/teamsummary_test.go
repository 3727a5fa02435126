package experiment

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSummarizeTeams(t *testing.T) {
	s := time.Second
	sample := func(at time.Duration, a, b int64, bDemand int64, bTrainers int) Sample {
		x := Sample{At: at, CPUAllocMilli: 100_000, Teams: []TeamSample{
			{Name: "a", CPURunningMilli: a, DemandMilli: 500_000, Trainers: int(a / 5000)},
			{Name: "b", CPURunningMilli: b, DemandMilli: bDemand, Trainers: bTrainers},
		}}
		x.Teams[0].FairMilli, x.Teams[1].FairMilli = 60_000, 30_000
		if bDemand == 0 {
			x.Teams[0].FairMilli, x.Teams[1].FairMilli = 90_000, 0
		}
		return x
	}
	r := &Result{
		Scenario: Teams, Size: Size{Interval: 2 * s}, End: 20 * s,
		Samples: []Sample{
			sample(0, 90_000, 0, 0, 0),               // b idle: not a sample of the deviation
			sample(10*s, 90_000, 0, 500_000, 0),      // b submitted: 30 points below its share
			sample(12*s, 75_000, 15_000, 500_000, 3), // reclaiming: 15 below
			sample(18*s, 62_000, 28_000, 500_000, 6), // settled: 2 off, b at 93% of its share
			sample(20*s, 60_000, 30_000, 500_000, 6),
		},
		Jobs:            []JobTiming{{Name: "b-01", Submitted: 10 * s, Running: 13 * s}, {Name: "b-02", Submitted: 10 * s, Running: -1}},
		Bursts:          []Burst{{Team: "b", At: 10 * s, End: 20 * s, Jobs: []string{"b-01", "b-02"}, Reclaiming: true}, {Team: "a", At: 0, End: 20 * s}},
		TrainersRemoved: 9,
		StoppedWhole:    []JobEvent{{Job: "a-01", At: 12 * s}},
	}
	got := SummarizeTeams(r)
	assert.Equal(t, 4, got.FairSamples)
	assert.InDelta(t, 30, got.DeviationMax, 1e-9)
	assert.InDelta(t, 30, got.DeviationP95, 1e-9, "the nearest rank of 4 samples is the largest")
	assert.Equal(t, 2, got.SettledSamples, "10 s and 12 s are within 4 intervals of b's burst")
	assert.InDelta(t, 2, got.SettledMax, 1e-9)
	assert.Equal(t, []time.Duration{3 * s, -1}, got.ReclaimJobs, "b-02 never ran")
	assert.Equal(t, []time.Duration{8 * s}, got.ReclaimShares, "b first used 90% of its share at 18 s")
	assert.Equal(t, 6, got.TrainersReclaimed, "team a's burst does not reclaim")
	assert.Equal(t, 9, got.TrainersRemoved)
	assert.Equal(t, 1, got.StoppedWhole)
	assert.Equal(t, "a", got.Teams[0].Name)
	assert.InDelta(t, (0.9+0.75+0.62+0.6)/4, got.Teams[0].Share, 1e-9)

	late := *r
	late.Bursts = append(slices.Clone(r.Bursts), Burst{Team: "c", At: 16 * s, End: 20 * s})
	assert.Equal(t, []time.Duration{-1}, SummarizeTeams(&late).ReclaimShares, "c's burst at 16 s ends b's phase before b reached 90%")

	p95, most, never := durationStats(got.ReclaimJobs)
	assert.Equal(t, 3*s, p95)
	assert.Equal(t, 3*s, most)
	assert.Equal(t, 1, never)
}

func TestPhaseEnd(t *testing.T) {
	s := time.Second
	bursts := []Burst{{At: 0, End: 60 * s}, {At: 20 * s, End: 80 * s}, {At: 40*s + 5*time.Millisecond, End: 100 * s}}
	assert.Equal(t, 20*s, phaseEnd(bursts, 0, 120*s))
	assert.Equal(t, 40*s+5*time.Millisecond, phaseEnd(bursts, 20*s, 120*s))
	assert.Equal(t, 60*s, phaseEnd(bursts, 40*s, 120*s), "a change within a second is the same phase's")
	assert.Equal(t, 120*s+1, phaseEnd(bursts, 100*s, 120*s), "none after: the end of the run, included")
}
