package progress

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Units a report's work may count.
const (
	UnitSamples = "samples"
	UnitSteps   = "steps"
)

// Report is one progress report, as the job's progress ConfigMap holds it.
type Report struct {
	// Done is the work done so far; Total the work in all, 0 when unknown.
	Done, Total int64
	// Unit is what the work counts: UnitSamples or UnitSteps.
	Unit string
	// Batch is the global batch (samples a step), 0 when unknown.
	Batch int64
	// Trainers is the world size the training ran at, 0 when unknown.
	Trainers int32
	// NoiseScale is the gradient noise scale, nil when not reported.
	NoiseScale *resource.Quantity
	// Time is when the training wrote the report, by its clock.
	Time time.Time
	// Run names the process that wrote it.
	Run string
}

// Parse reads a report from the progress ConfigMap's data. A ConfigMap
// without the done key holds no report yet: ok is false and err nil. A
// report that cannot be read is an error naming the key.
func Parse(data map[string]string) (r Report, ok bool, err error) {
	if _, has := data[v1.ProgressDone]; !has {
		return Report{}, false, nil
	}
	r.Unit = UnitSamples
	if u, has := data[v1.ProgressUnit]; has && u != "" {
		if u != UnitSamples && u != UnitSteps {
			return Report{}, false, fmt.Errorf("progress key %s is %q: must be %s or %s", v1.ProgressUnit, u, UnitSamples, UnitSteps)
		}
		r.Unit = u
	}
	if r.Done, err = count(data, v1.ProgressDone, true); err != nil {
		return Report{}, false, err
	}
	if r.Total, err = count(data, v1.ProgressTotal, false); err != nil {
		return Report{}, false, err
	}
	if r.Batch, err = count(data, v1.ProgressBatch, false); err != nil {
		return Report{}, false, err
	}
	trainers, err := count(data, v1.ProgressTrainers, false)
	if err != nil {
		return Report{}, false, err
	}
	if trainers > math.MaxInt32 {
		return Report{}, false, fmt.Errorf("progress key %s is %d: too large", v1.ProgressTrainers, trainers)
	}
	r.Trainers = int32(trainers) // #nosec G115 -- at most MaxInt32, checked above
	if r.Time, err = unixTime(data[v1.ProgressTime]); err != nil {
		return Report{}, false, err
	}
	if s, has := data[v1.ProgressNoiseScale]; has && s != "" {
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() < 0 {
			return Report{}, false, fmt.Errorf("progress key %s is %q: must be a number, 0 or more", v1.ProgressNoiseScale, s)
		}
		r.NoiseScale = &q
	}
	r.Run = data[v1.ProgressRun]
	if len(r.Run) > 128 {
		return Report{}, false, fmt.Errorf("progress key %s is %d characters long: at most 128", v1.ProgressRun, len(r.Run))
	}
	return r, true, nil
}

// count reads a whole number, 0 or more, at key; absent is 0 unless
// required.
func count(data map[string]string, key string, required bool) (int64, error) {
	s, has := data[key]
	if !has || s == "" {
		if required {
			return 0, fmt.Errorf("progress key %s is missing: it is the work done, a whole number", key)
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("progress key %s is %q: must be a whole number, 0 or more", key, s)
	}
	return n, nil
}

// unixTime reads the time key: Unix seconds, with a fraction.
func unixTime(s string) (time.Time, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 1) {
		return time.Time{}, fmt.Errorf("progress key %s is %q: must be the report's time in Unix seconds", v1.ProgressTime, s)
	}
	sec, frac := math.Modf(f)
	// To the microsecond, as status.progress.reported keeps it: the same
	// report read again is then the same time.
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Truncate(time.Microsecond), nil
}
