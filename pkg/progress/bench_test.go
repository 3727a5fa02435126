package progress

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// BenchmarkAdvance measures what one report costs the controller: parsing
// it and advancing a status measured at three sizes (a refit now and then
// included, as a job reporting every 10 s sees it).
func BenchmarkAdvance(b *testing.B) {
	s := reportingStatus(0)
	data := map[string]string{"done": "0", "total": "100000000", "batch": "8192", "trainers": "3", "time": "", "run": "a"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at := t0.Add(time.Duration(400+i*10) * time.Second)
		data["done"] = strconv.Itoa((400 + i*10) * 2000)
		data["time"] = strconv.FormatInt(at.Unix(), 10)
		r, _, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		s = Advance(s, r, Size{Trainers: 3, Nodes: 1, Desired: 3})
	}
}

// BenchmarkProgressMemory measures what 1,000 reporting jobs add to edl's
// informers: each job's progress ConfigMap and its status.progress, as
// edl's caches hold them (B/op is the heap for all 1,000).
func BenchmarkProgressMemory(b *testing.B) {
	const jobs = 1000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cms := make([]*corev1.ConfigMap, jobs)
		statuses := make([]*v1.ProgressStatus, jobs)
		for i := range jobs {
			name := "job-" + strconv.Itoa(i)
			cms[i] = &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-progress", Namespace: "team", UID: "0f3e2a1c-9d8b-4f6e-a5c4-3b2a1f0e9d8c",
					ResourceVersion: "123456789", Labels: map[string]string{v1.LabelMaster: name},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob", Name: name, UID: "1f3e2a1c-9d8b-4f6e-a5c4-3b2a1f0e9d8c"}}},
				Data: map[string]string{"done": "123456789", "total": "987654321", "unit": "samples", "batch": "8192",
					"trainers": "3", "time": "1765000000.123", "run": "job-trainer-x7k2p/42/1765000000"},
			}
			statuses[i] = reportingStatus(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/jobs, "B/job")
		runtime.KeepAlive(cms)
		runtime.KeepAlive(statuses)
	}
}

// reportingStatus is the status of a job measured at 1, 2 and 3 trainers.
func reportingStatus(seed int) *v1.ProgressStatus {
	var s *v1.ProgressStatus
	at := time.Duration(0)
	for n := int32(1); n <= 3; n++ {
		for i := 0; i < 10; i++ {
			at += 10 * time.Second
			s = Advance(s, Report{Done: int64(at.Seconds()) * (700*int64(n) + int64(seed%7)), Total: 100_000_000, Unit: UnitSamples, Batch: 8192,
				Trainers: n, Time: t0.Add(at), Run: strconv.Itoa(int(n))}, Size{Trainers: n, Nodes: 1, Desired: n})
		}
	}
	return s
}
