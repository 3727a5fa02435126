package trace

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Result is one run: a workload under a policy.
type Result struct {
	Workload, Policy string
	// GPUs is the cluster's.
	GPUs int
	// Jobs are the workload's, by arrival.
	Jobs []JobResult
	// GPUSeconds are the GPU-seconds the trainers held, restarts
	// included; PeakGPUs is the most GPUs they held at once, and
	// PeakNodeGPUs the most on one node.
	GPUSeconds             float64
	PeakGPUs, PeakNodeGPUs int
	// Plans is how many times the planner ran.
	Plans int
}

// JobResult is one job of a run, its times in seconds from the start.
type JobResult struct {
	Name string
	// Arrival is when it was submitted, Start when it first trained (its
	// minimum bound), End when it reached its target.
	Arrival, Start, End float64
	// Resizes counts its restarts after the first.
	Resizes int
	// Work is its steps to the target, and Segments the sizes it ran at.
	Work     float64
	Segments []Segment
}

// JCT is the job's completion time: from its arrival to its end.
func (j JobResult) JCT() float64 { return j.End - j.Arrival }

// result collects the run's results.
func (s *sim) result(workload string) *Result {
	r := &Result{Workload: workload, Policy: s.policy.Name, GPUs: s.c.totalGPUs(), PeakGPUs: s.peak, PeakNodeGPUs: s.peakNode, Plans: s.plans}
	for _, j := range s.jobs {
		r.GPUSeconds += j.gpuSeconds
		r.Jobs = append(r.Jobs, JobResult{Name: j.spec.Name, Arrival: j.spec.Arrival, Start: j.start, End: j.end,
			Resizes: j.resizes, Work: j.spec.Work, Segments: j.segments})
	}
	return r
}

// Summary is a run's figures, in seconds.
type Summary struct {
	Workload, Policy string
	// AvgJCT, P50JCT and P99JCT are the mean, median and 99th percentile
	// of the jobs' completion times (the percentiles the smallest JCT
	// that many of the jobs do not exceed).
	AvgJCT, P50JCT, P99JCT float64
	// Makespan is from the first arrival to the last end.
	Makespan float64
	// Utilization is the share of the cluster's GPU-time over the
	// makespan that trainers held, restarts included.
	Utilization float64
	// ResizesPerJobHour is the resizes of all jobs over the hours they
	// ran, from their start to their end.
	ResizesPerJobHour float64
}

// Summarize computes a run's figures.
func Summarize(r *Result) Summary {
	s := Summary{Workload: r.Workload, Policy: r.Policy}
	if len(r.Jobs) == 0 {
		return s
	}
	jcts := make([]float64, len(r.Jobs))
	first, last := math.Inf(1), math.Inf(-1)
	var resizes, ran float64
	for i, j := range r.Jobs {
		jcts[i] = j.JCT()
		first, last = math.Min(first, j.Arrival), math.Max(last, j.End)
		resizes += float64(j.Resizes)
		ran += j.End - j.Start
	}
	slices.SortFunc(jcts, cmp.Compare[float64])
	s.AvgJCT = stat.Mean(jcts, nil)
	s.P50JCT = stat.Quantile(0.5, stat.Empirical, jcts, nil)
	s.P99JCT = stat.Quantile(0.99, stat.Empirical, jcts, nil)
	s.Makespan = last - first
	if s.Makespan > 0 {
		s.Utilization = r.GPUSeconds / (float64(r.GPUs) * s.Makespan)
	}
	if ran > 0 {
		s.ResizesPerJobHour = resizes / (ran / 3600)
	}
	return s
}
