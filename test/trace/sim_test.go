package trace

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkProgress asserts that a job's steps, recomputed from the sizes it
// ran at, are its work: each segment trains from its restart plus the
// restart cost until the next segment or the end, at its step time, and
// each segment's step time is its application's at its placement.
func checkProgress(t *testing.T, cfg Config, spec *JobSpec, j JobResult) {
	t.Helper()
	require.NotEmpty(t, j.Segments, "%s ran", j.Name)
	cost := cfg.RestartCost.Seconds()
	var steps float64
	for i, seg := range j.Segments {
		until := j.End
		if i+1 < len(j.Segments) {
			until = j.Segments[i+1].At
		}
		if run := until - (seg.At + cost); run > 0 {
			steps += run / seg.Timing.Step
		}
		sum := 0
		for _, n := range seg.Placement {
			sum += n
		}
		assert.Equal(t, seg.Trainers, sum, "%s segment %d: placement %v", j.Name, i, seg.Placement)
		assert.Equal(t, spec.App.StepTime(seg.Placement, spec.Batch/float64(seg.Trainers)), seg.Timing, "%s segment %d", j.Name, i)
	}
	assert.InDelta(t, j.Work, steps, 1e-6*j.Work, "%s: steps made", j.Name)
	assert.Equal(t, len(j.Segments)-1, j.Resizes, "%s: every segment after the first is a resize", j.Name)
}

// TestSingleJobAlone: a job alone on the cluster starts at the first plan
// after it arrives and ends when its work is done at the speed of the
// sizes it ran at, plus a restart cost per size; static runs it at its
// num_replicas throughout, fulfillment grows it into the idle cluster.
func TestSingleJobAlone(t *testing.T) {
	apps := loadApps(t)
	cfg := DefaultConfig()
	spec := JobSpec{Name: "alone", Arrival: 7, App: apps["cifar10"], Replicas: 6, Batch: 2048}
	var err error
	spec.Work, err = spec.App.Work(spec.Batch)
	require.NoError(t, err)
	w := Workload{Name: "alone", Jobs: []JobSpec{spec}}
	interval := cfg.Interval.Seconds()
	firstPlan := math.Ceil(spec.Arrival/interval) * interval

	r, err := Run(cfg, w, Static())
	require.NoError(t, err)
	j := r.Jobs[0]
	assert.Equal(t, firstPlan, j.Start)
	require.Len(t, j.Segments, 1)
	seg := j.Segments[0]
	assert.Equal(t, 6, seg.Trainers)
	assert.Equal(t, []int{4, 2}, seg.Placement, "packed: a full node, then the rest")
	assert.InDelta(t, j.Start+cfg.RestartCost.Seconds()+spec.Work*seg.Timing.Step, j.End, 1e-6)
	assert.Zero(t, j.Resizes)
	checkProgress(t, cfg, &spec, j)

	r, err = Run(cfg, w, Fulfillment(64))
	require.NoError(t, err)
	j = r.Jobs[0]
	lo, hi := spec.App.Trainers(spec.Batch)
	assert.Equal(t, firstPlan, j.Start)
	assert.Equal(t, int(lo), j.Segments[0].Trainers, "admitted at its minimum")
	last := j.Segments[len(j.Segments)-1].Trainers
	assert.Greater(t, last, int(lo), "grown into the idle cluster")
	assert.LessOrEqual(t, last, int(min(hi, 64)))
	checkProgress(t, cfg, &spec, j)
}

// TestWorkloadProperties runs the first 30 jobs of workload-1 under each
// policy: every job finishes, its steps add up, its trainers stay within
// its bounds, the trainers never hold more GPUs than the cluster or a
// node has, and static never resizes.
func TestWorkloadProperties(t *testing.T) {
	apps := loadApps(t)
	w, err := ReadWorkload(testWorkload, apps)
	require.NoError(t, err)
	w.Jobs = w.Jobs[:30]
	cfg := DefaultConfig()
	gpus := cfg.Nodes * cfg.GPUsPerNode
	for _, p := range Policies(gpus) {
		t.Run(p.Name, func(t *testing.T) {
			r, err := Run(cfg, w, p)
			require.NoError(t, err)
			require.Len(t, r.Jobs, len(w.Jobs))
			resizes := 0
			for i, j := range r.Jobs {
				spec := &w.Jobs[i]
				require.Equal(t, spec.Name, j.Name)
				assert.True(t, j.Arrival <= j.Start && j.Start < j.End, "%s: arrival %g, start %g, end %g", j.Name, j.Arrival, j.Start, j.End)
				checkProgress(t, cfg, spec, j)
				lo, hi := p.Trainers(spec)
				for _, seg := range j.Segments {
					assert.True(t, seg.Trainers >= int(lo) && seg.Trainers <= int(hi), "%s: %d trainers outside [%d, %d]", j.Name, seg.Trainers, lo, hi)
				}
				resizes += j.Resizes
			}
			assert.LessOrEqual(t, r.PeakGPUs, gpus)
			assert.LessOrEqual(t, r.PeakNodeGPUs, cfg.GPUsPerNode)
			s := Summarize(r)
			assert.True(t, s.Utilization > 0 && s.Utilization <= 1, "utilization %g", s.Utilization)
			if p.Name == "static" {
				assert.Zero(t, resizes, "static never resizes")
			} else {
				assert.Positive(t, resizes, "fulfillment resizes jobs as the cluster changes")
			}
		})
	}
}

// TestRunRejectsJobsTooBig: a job whose minimum exceeds the cluster is an
// error that names it.
func TestRunRejectsJobsTooBig(t *testing.T) {
	apps := loadApps(t)
	spec := JobSpec{Name: "huge", App: apps["cifar10"], Replicas: 65, Batch: 4096, Work: 1}
	_, err := Run(DefaultConfig(), Workload{Name: "w", Jobs: []JobSpec{spec}}, Static())
	assert.ErrorContains(t, err, "job huge")
}
