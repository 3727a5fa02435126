package trace

import (
	"slices"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// phase is where a job is in its life.
type phase int

const (
	// future: not submitted yet.
	future phase = iota
	// queued: submitted, waiting for admission.
	queued
	// admitted: a plan admitted it; its minimum is not all bound yet.
	admitted
	// running: its minimum was bound once (the TrainingJob's phase
	// Running); it trains whenever at least its minimum is bound.
	running
	// done: it reached its target.
	done
)

// job is one simulated TrainingJob.
type job struct {
	spec     *JobSpec
	key      string
	min, max int32
	phase    phase
	// queuedAt is when the job last entered the queue, admittedAt when it
	// was last admitted, in seconds.
	queuedAt, admittedAt float64
	// replicas is the trainer ReplicaSet's spec.replicas.
	replicas int32
	pods     []*pod
	// changed: a bound trainer came or went since the job last
	// (re)started, which restarts it.
	changed bool

	// trainers are the bound trainers the job trains with, at timing; 0
	// while it does not train. It makes no progress before resumeAt.
	trainers int
	timing   Timing
	resumeAt float64
	steps    float64
	started  bool
	start    float64
	end      float64
	resizes  int
	segments []Segment
	// nodes are the nodes the trainers use; measured what the job's
	// progress reports told of each size it trained at.
	nodes    int
	measured []SizeThroughput

	// lastScaleDown and lastResize are the times of the job's last
	// scale-down and last scaling decision, -1 for never; resizeCost is
	// the cost of its last resize as edl measures it, 0 before one.
	lastScaleDown, lastResize float64
	resizeCost                float64
	// gpuSeconds are the GPU-seconds its bound trainers held.
	gpuSeconds float64
	// status is what edl made of its progress reports ([sim.report]),
	// the last written at reportedAt.
	status     *v1.ProgressStatus
	reportedAt float64
}

// Segment is a stretch of a job's run at one size: from At (the restart)
// until the next segment or the job's end.
type Segment struct {
	At       float64
	Trainers int
	// Placement is the trainers on each node used.
	Placement []int
	// Timing is the step at that placement and the job's local batch.
	Timing Timing
}

// restart starts or restarts a job on the trainers bound at now: it
// trains, after the restart cost, at the step time of their placement,
// or not at all below its minimum. A restart of a job that trained
// before is a resize.
func (j *job) restart(c *cluster, now, cost float64) {
	j.changed = false
	placement, bound := c.placement(j)
	if j.started {
		j.resizes++
		j.resizeCost = cost
	}
	j.trainers = 0
	if bound < int(j.min) {
		return // torchrun waits for its minimum
	}
	if !j.started {
		j.started, j.start, j.phase = true, now, running
	}
	j.trainers, j.nodes, j.resumeAt = bound, len(placement), now+cost
	j.timing = j.spec.App.StepTime(placement, j.spec.Batch/float64(bound))
	j.segments = append(j.segments, Segment{At: now, Trainers: bound, Placement: placement, Timing: j.timing})
}

// measure adds steps done in seconds to what the job's progress reports
// told of its size.
func (j *job) measure(steps, seconds float64) {
	t, n := int32of(j.trainers), int32of(j.nodes)
	i := slices.IndexFunc(j.measured, func(m SizeThroughput) bool { return m.Trainers == t && m.Nodes == n })
	if i < 0 {
		j.measured = append(j.measured, SizeThroughput{Trainers: t, Nodes: n})
		i = len(j.measured) - 1
	}
	j.measured[i].Steps += steps
	j.measured[i].Seconds += seconds
}

// advance trains the job from `from` to `to` seconds and returns whether
// it reached its target, at j.end; the GPUs its trainers hold count until
// then.
func (j *job) advance(from, to float64) (finished bool) {
	bound := 0
	for _, p := range j.pods {
		if p.node >= 0 {
			bound++
		}
	}
	until := to
	if j.trainers > 0 {
		if begin := max(from, j.resumeAt); begin < to {
			rate := 1 / j.timing.Step
			end, steps := to, (to-begin)*rate
			if need := j.spec.Work - j.steps; need <= steps {
				end, steps = begin+need/rate, need
				j.end, until, finished = end, end, true
			}
			j.steps += steps
			j.measure(steps, end-begin)
		}
	}
	j.gpuSeconds += float64(bound) * (until - from)
	return finished
}

// reports are what the job's progress reports have told edl.
func (j *job) reports() Reports {
	r := Reports{Done: j.steps, Total: j.spec.Work, Batch: j.spec.Batch, Measured: slices.Clone(j.measured), RestartCost: j.resizeCost,
		Status: j.status}
	if j.trainers > 0 {
		r.Trainers, r.Nodes = int32of(j.trainers), int32of(j.nodes)
	}
	return r
}
