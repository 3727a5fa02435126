package progress

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/scaling"
)

// Basis says what a throughput rests on: a measurement at the size, else
// the scaling model's prediction (scaling.Basis: fitted, optimistic,
// capped), or nothing — a job that reports nothing, or not yet at any
// size for MinMeasured, is unmeasured.
type Basis string

// Measured is the basis of a throughput measured at its size.
const Measured Basis = "measured"

// Throughput is the job's throughput at trainers on nodes, in its unit a
// second, and what it rests on: measured at that size, else predicted by
// its model; 0 when neither knows.
func Throughput(s *v1.ProgressStatus, trainers, nodes int32) (float64, Basis) {
	if s == nil {
		return 0, Basis(scaling.Unmeasured.String())
	}
	return throughput(s, trainers, nodes)
}

func throughput(s *v1.ProgressStatus, trainers, nodes int32) (float64, Basis) {
	for _, m := range s.Measured {
		if m.Trainers == trainers && m.Nodes == nodes && m.Millis >= MinMeasured.Milliseconds() {
			return float64(m.Work) * 1000 / float64(m.Millis), Measured
		}
	}
	model := Model(s)
	if !model.Measured() {
		return 0, Basis(scaling.Unmeasured.String())
	}
	batch, perStep := batches(s)
	p := model.Predict(int(trainers), int(nodes), batch)
	return p.Throughput * perStep / batch, Basis(p.Basis.String())
}

// Speedup is the job's throughput at trainers relative to one trainer's,
// and what it rests on; a job without a model gains equally from every
// trainer.
func Speedup(s *v1.ProgressStatus, trainers, nodes int32) (float64, Basis) {
	model := Model(s)
	if !model.Measured() {
		return float64(max(trainers, 0)), Basis(scaling.Unmeasured.String())
	}
	batch, _ := batches(s)
	p := model.Predict(int(trainers), int(nodes), batch)
	return p.Speedup, Basis(p.Basis.String())
}

// batches are the global batch the model computes with (the report's, or
// 1 when unknown: the model's shape does not depend on its scale) and the
// units of work in a step (the batch for samples, 1 for steps).
func batches(s *v1.ProgressStatus) (batch, perStep float64) {
	batch = 1
	if s.Batch > 0 {
		batch = float64(s.Batch)
	}
	if s.Unit == UnitSteps {
		return batch, 1
	}
	return batch, batch
}

// Model is the scaling model in s: the zero scaling.Model when none was
// fitted.
func Model(s *v1.ProgressStatus) scaling.Model {
	if s == nil || s.Model == nil {
		return scaling.Model{}
	}
	m := s.Model
	f := func(q resource.Quantity) float64 { return q.AsApproximateFloat64() }
	return scaling.Model{
		Params: scaling.Params{
			GradBase: f(m.GradBase), GradPerSample: f(m.GradPerSample),
			SyncLocalBase: f(m.SyncLocalBase), SyncLocalPerReplica: f(m.SyncLocalPerReplica),
			SyncNetBase: f(m.SyncNetBase), SyncNetPerReplica: f(m.SyncNetPerReplica),
			Overlap: f(m.Overlap),
		},
		MaxTrainers:  int(m.MaxTrainers),
		Measurements: int(m.Sizes),
		FitError:     f(m.FitError),
	}
}

// refit fits the model again when a size was measured that it did not
// see, or when the time measured has grown by half since it was fitted: a
// fit costs milliseconds, and a job reports every 10 s.
func refit(s *v1.ProgressStatus) {
	batch, perStep := batches(s)
	var ms []scaling.Measurement
	var millis int64
	for _, m := range s.Measured {
		millis += m.Millis
		if m.Millis < MinMeasured.Milliseconds() || m.Work <= 0 {
			continue
		}
		thr := float64(m.Work) * 1000 / float64(m.Millis)
		ms = append(ms, scaling.Measurement{
			Trainers: int(m.Trainers), Nodes: int(m.Nodes),
			LocalBatch: batch / float64(m.Trainers), StepTime: perStep / thr,
		})
	}
	if len(ms) == 0 || s.Model != nil && int(s.Model.Sizes) == len(ms) && 2*millis < 3*s.Model.FittedMillis {
		return
	}
	fitted, err := scaling.Fit(ms)
	if err != nil {
		return // the last model stands
	}
	s.Model = toAPI(fitted, len(ms), millis)
}

func toAPI(m scaling.Model, sizes int, millis int64) *v1.ScalingModel {
	p := m.Params
	return &v1.ScalingModel{
		GradBase: quantity(p.GradBase), GradPerSample: quantity(p.GradPerSample),
		SyncLocalBase: quantity(p.SyncLocalBase), SyncLocalPerReplica: quantity(p.SyncLocalPerReplica),
		SyncNetBase: quantity(p.SyncNetBase), SyncNetPerReplica: quantity(p.SyncNetPerReplica),
		Overlap:     quantity(p.Overlap),
		MaxTrainers: int32(min(m.MaxTrainers, math.MaxInt32)), // #nosec G115 -- clamped to MaxInt32
		Sizes:       int32(min(sizes, math.MaxInt32)),         // #nosec G115 -- clamped to MaxInt32
		FitError:    quantity(m.FitError), FittedMillis: millis,
	}
}

// quantity is v to six significant digits as a Quantity (which keeps
// nanos: smaller values round up to 1n). A status read back compares equal
// to it: equality.Semantic compares Quantities by value.
func quantity(v float64) resource.Quantity {
	return resource.MustParse(strconv.FormatFloat(v, 'g', 6, 64))
}

// finish sets what follows from the last report: the percent done, the
// throughput at its size — its run's, once measured for RunMeasured — and
// the ETA at it, or at desired, with a restart's cost, when a resize to
// desired is under way.
func finish(s *v1.ProgressStatus, desired int32) {
	s.Percent, s.Throughput, s.ETA, s.FinishesAt = nil, "", "", nil
	if s.Total > 0 {
		p := int32(min(s.Done*100/s.Total, 100)) // #nosec G115 -- clamped to [0, 100]
		s.Percent = &p
	}
	thr, _ := throughput(s, s.Trainers, s.Nodes)
	if s.RunMillis >= RunMeasured.Milliseconds() {
		thr = float64(s.RunWork) * 1000 / float64(s.RunMillis)
	}
	if thr > 0 {
		s.Throughput = Rate(thr)
	}
	if s.Total <= 0 || thr <= 0 {
		return
	}
	var wait time.Duration
	if desired > 0 && desired != s.Trainers {
		if t, _ := throughput(s, desired, min(max(s.Nodes, 1), desired)); t > 0 {
			thr = t
		}
		if s.RestartCost != nil {
			wait = s.RestartCost.Duration
		}
	}
	left := (wait + time.Duration(float64(max(s.Total-s.Done, 0))/thr*float64(time.Second))).Round(time.Second)
	s.ETA = duration.HumanDuration(left)
	at := metav1.NewTime(s.Reported.Add(left).Truncate(time.Second))
	s.FinishesAt = &at
}

// Rate formats a throughput for kubectl: three significant digits.
func Rate(perSecond float64) string {
	switch {
	case perSecond >= 100:
		return fmt.Sprintf("%.0f/s", perSecond)
	case perSecond >= 10:
		return fmt.Sprintf("%.1f/s", perSecond)
	}
	return fmt.Sprintf("%.2f/s", perSecond)
}
