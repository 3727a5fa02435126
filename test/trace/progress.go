package trace

import (
	"math"
	"strconv"
	"sync"

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/progress"
	"github.com/paddlepaddle/edl/pkg/scaling"
)

// ReportInterval is how often, in seconds, a simulated job's rank 0 writes
// its progress, as example/edl_progress.py writes at most once every 10 s.
const ReportInterval = 10

// report has every job that trains write its progress at now, at most
// every ReportInterval, and edl read it: progress.Advance, as the
// controller advances status.progress from the job's ConfigMap. A run's
// first report comes once its restart is over, when the processes train.
func (s *sim) report() {
	if !s.policy.Learns {
		return
	}
	for _, j := range s.jobs[:s.next] {
		if j.phase != running || j.trainers == 0 || s.now < j.resumeAt || s.now-j.reportedAt < ReportInterval {
			continue
		}
		j.reportedAt = s.now
		r := progress.Report{
			Done: int64(j.steps * j.spec.Batch), Total: int64(math.Ceil(j.spec.Work * j.spec.Batch)), Unit: progress.UnitSamples,
			Batch: int64(j.spec.Batch), Trainers: int32of(j.trainers), Time: s.at(s.now), Run: strconv.Itoa(len(j.segments)),
		}
		j.status = progress.Advance(j.status, r, progress.Size{Trainers: int32of(j.trainers), Nodes: int32of(j.nodes), Desired: j.replicas})
	}
}

// Goodput is edl's planner under the goodput policy, each job's trainers
// ranging as under Fulfillment: the planner knows of a job what edl makes
// of its progress reports (pkg/autoscaler's ProgressOf of the status
// progress.Advance keeps), the model it learns as the job runs at new
// sizes.
func Goodput(gpus int) Policy {
	p := Fulfillment(gpus)
	p.Name = "goodput"
	p.Options = func(o *planner.Options) { o.Policy = planner.PolicyGoodput }
	p.Job = func(pj *planner.Job, r Reports, _ *JobSpec) { pj.Progress = autoscaler.ProgressOf(r.Status) }
	p.Learns = true
	return p
}

// Oracle is the goodput policy told each job's true scaling from the
// start: a model fitted to the trace's step times at every size in its
// range (on the fewest nodes), which is the most learning could find,
// and the time it truly has left. It bounds what learning can reach.
func Oracle(gpus int) Policy {
	p := Goodput(gpus)
	p.Name, p.Learns = "oracle", false
	var models sync.Map // *JobSpec → scaling.Model, shared by the runs
	p.Job = func(pj *planner.Job, r Reports, spec *JobSpec) {
		m, ok := models.Load(spec)
		if !ok {
			m, _ = models.LoadOrStore(spec, trueModel(spec, pj.Min, pj.Max))
		}
		prog := &planner.Progress{Model: m.(scaling.Model), Batch: spec.Batch, Nodes: max(r.Nodes, 1)}
		if r.Trainers > 0 {
			step := spec.App.StepTime(packed(int(r.Trainers), int(r.Nodes)), spec.Batch/float64(r.Trainers)).Step
			prog.Throughput = spec.Batch / step
			prog.Left = seconds((r.Total - r.Done) * step)
		}
		pj.Progress = prog
	}
	return p
}

// trueModel is the scaling model fitted to the trace's step times of the
// job at every size from lo to hi trainers, each on the fewest nodes.
func trueModel(spec *JobSpec, lo, hi int32) scaling.Model {
	var ms []scaling.Measurement
	for n := max(lo, 1); n <= hi; n++ {
		nodes := (int(n) + gpusPerNodeTrue - 1) / gpusPerNodeTrue
		local := spec.Batch / float64(n)
		t := spec.App.StepTime(packed(int(n), nodes), local)
		ms = append(ms, scaling.Measurement{Trainers: int(n), Nodes: nodes, LocalBatch: local, StepTime: t.Step})
	}
	m, err := scaling.Fit(ms)
	if err != nil {
		return scaling.Model{}
	}
	return m
}

// gpusPerNodeTrue is the GPUs of a node the oracle's sizes are packed on,
// Pollux's cluster's.
const gpusPerNodeTrue = 4

// packed is n trainers spread as evenly as may be over nodes nodes.
func packed(n, nodes int) []int {
	nodes = min(max(nodes, 1), n)
	out := make([]int, nodes)
	for i := range n {
		out[i%nodes]++
	}
	return out
}
