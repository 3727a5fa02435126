package progress

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// MinMeasured is the least time measured at a size for its throughput to
// count: a size seen between two reports only is not measured yet.
const MinMeasured = 5 * time.Second

// RunMeasured is how long the current run must have been measured for the
// ETA to be at its own throughput rather than its size's: the run's
// conditions (its node, its neighbours) are the ones the rest of the job
// will see.
const RunMeasured = 20 * time.Second

// Size is what the controller sees of a job's trainers when it reads a
// report.
type Size struct {
	// Trainers is the running trainers: the world size of a report that
	// does not say its own.
	Trainers int32
	// Nodes is the nodes they run on.
	Nodes int32
	// Desired is the trainers the job's ReplicaSet asks for; when it is
	// not the report's world size, a resize is under way and the ETA is
	// at Desired, with a restart's cost.
	Desired int32
}

// Advance is the job's progress status after report r, from the status
// prev (nil for a job that reported nothing yet) and the size the job's
// trainers are seen at. It is pure.
func Advance(prev *v1.ProgressStatus, r Report, at Size) *v1.ProgressStatus {
	s := &v1.ProgressStatus{}
	if prev != nil {
		s = prev.DeepCopy()
	}
	s.Error = ""
	trainers := r.Trainers
	if trainers <= 0 {
		trainers = max(at.Trainers, 1)
	}
	nodes := min(max(at.Nodes, 1), trainers)
	switch {
	case prev == nil || r.Time.Before(prev.Reported.Time):
		// The first report, or one by a clock behind the last: a new
		// baseline, measuring nothing.
		s.RunWork, s.RunMillis, s.Warm = 0, 0, false
	case r.Time.Equal(prev.Reported.Time) && r.Run == prev.Run:
		// The report seen already: only the ETA's size may have moved.
		finish(s, at.Desired)
		return s
	default:
		dt := r.Time.Sub(prev.Reported.Time)
		work := r.Done - prev.Done
		switch {
		case r.Run != prev.Run || trainers != prev.Trainers || work < 0:
			restartCost(s, trainers, nodes, work, dt)
			s.RunWork, s.RunMillis, s.Warm = 0, 0, false
		case !prev.Warm:
			// The run's first interval: its warm-up (a process that
			// imports, loads and compiles) is the restart's, not the
			// size's.
			s.Warm = true
		default:
			s.Measured = add(s.Measured, trainers, nodes, work, dt)
			s.RunWork += work
			s.RunMillis += dt.Milliseconds()
		}
	}
	s.Unit, s.Done, s.Total, s.Batch = r.Unit, r.Done, r.Total, r.Batch
	s.Trainers, s.Nodes, s.Run, s.NoiseScale = trainers, nodes, r.Run, r.NoiseScale
	s.Reported = metav1.NewMicroTime(r.Time)
	refit(s)
	finish(s, at.Desired)
	return s
}

// add adds work done in dt at a size to the measurements, kept in order of
// trainers and nodes.
func add(ms []v1.SizeThroughput, trainers, nodes int32, work int64, dt time.Duration) []v1.SizeThroughput {
	i, found := slices.BinarySearchFunc(ms, [2]int32{trainers, nodes}, func(m v1.SizeThroughput, k [2]int32) int {
		if m.Trainers != k[0] {
			return int(m.Trainers - k[0])
		}
		return int(m.Nodes - k[1])
	})
	if !found {
		ms = slices.Insert(ms, i, v1.SizeThroughput{Trainers: trainers, Nodes: nodes})
	}
	ms[i].Work += work
	ms[i].Millis += dt.Milliseconds()
	return ms
}

// restartCost measures a restart between the last report and this one,
// at the new size: the time between them less the time their work takes
// at the new size's throughput (work lost, negative, adds its redoing).
// Without a throughput to price the work, a restart that did no work costs
// the time between the reports, and one that did is not measured.
func restartCost(s *v1.ProgressStatus, trainers, nodes int32, work int64, dt time.Duration) {
	thr, _ := throughput(s, trainers, nodes)
	var cost time.Duration
	switch {
	case thr > 0:
		cost = dt - time.Duration(float64(work)/thr*float64(time.Second))
	case work == 0:
		cost = dt
	default:
		return
	}
	s.RestartCost = &metav1.Duration{Duration: max(cost, 0).Round(time.Second)}
}
