package cluster

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// loadedTracker returns a tracker of nodes nodes carrying 30 pods each, two
// thirds of them trainers of nodes/5 jobs: 5,000 nodes make 150,000 pods.
func loadedTracker(nodes int) *Tracker {
	s := newTracker(Config{})
	for i := range nodes {
		s.onNode(builders.Node(fmt.Sprintf("node-%05d", i), "64", "256Gi"))
	}
	for i := range nodes * 30 {
		s.onPod(slimPod(loadedPod(nodes, i, i%nodes, "1")))
	}
	return s
}

// loadedPod is pod i of loadedTracker(nodes), bound to node node at
// resourceVersion rv.
func loadedPod(nodes, i, node int, rv string) *corev1.Pod {
	p := builders.Pod(fmt.Sprintf("pod-%06d", i), builders.OnNode(fmt.Sprintf("node-%05d", node)), builders.PodRV(rv))
	if i%3 == 0 {
		p.Spec.Containers[0].Resources.Requests = builders.CPUMemory("1", "2Gi")
	} else {
		p.Spec.Containers[0].Resources.Requests = builders.CPUMemory("2500m", "8Gi")
		builders.TrainerOf(fmt.Sprintf("job-%04d", i%(nodes/5)))(p)
	}
	return p
}

// cpuTime is the user and system CPU time the process has used so far: on a
// shared machine it is steadier than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTrackerPodUpdate measures one pod update event against a
// snapshot of 5,000 nodes and 150,000 pods: a trainer moving between Pending
// and Running on another node, which touches every aggregate. The handler
// gets the pod as the informer's transform left it (BenchmarkTransformPod
// measures that).
func BenchmarkTrackerPodUpdate(b *testing.B) {
	s := loadedTracker(5000)
	const n = 1024
	var versions [2][n]*Pod
	for i := range n {
		name := fmt.Sprintf("pod-%06d", 3*i+1) // a trainer
		job := builders.TrainerOf(fmt.Sprintf("job-%04d", (3*i+1)%1000))
		versions[0][i] = slimPod(builders.Pod(name, job, builders.Requests("2500m", "8Gi"), builders.OnNode("node-00001"), builders.Phase(corev1.PodPending), builders.PodRV("a")))
		versions[1][i] = slimPod(builders.Pod(name, job, builders.Requests("2500m", "8Gi"), builders.OnNode("node-00002"), builders.PodRV("b")))
	}
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime()
	for i := range b.N {
		s.onPod(versions[(i/n)%2][i%n])
	}
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTrackerPodCreateDelete measures a trainer appearing and
// disappearing (two events per op), the path that also re-sorts its job's
// trainer list, against the same snapshot.
func BenchmarkTrackerPodCreateDelete(b *testing.B) {
	s := loadedTracker(5000)
	const n = 1024
	var pods [n]*Pod
	for i := range n {
		pods[i] = slimPod(builders.Pod(fmt.Sprintf("new-%06d", i), builders.TrainerOf(fmt.Sprintf("job-%04d", i%1000)),
			builders.Requests("2500m", "8Gi"), builders.OnNode("node-00003"), builders.CreatedAfter(time.Duration(i)*time.Second)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime()
	for i := range b.N {
		s.onPod(pods[i%n])
		s.onPodDelete(pods[i%n])
	}
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTrackerInquiryResource measures the per-cycle deep copy at 5,000
// nodes and 150,000 pods, with the debug line filtered out as in production.
func BenchmarkTrackerInquiryResource(b *testing.B) {
	s := loadedTracker(5000)
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime()
	for range b.N {
		s.InquiryResource()
	}
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkTransformPod measures the informer transform on a typical pod.
func BenchmarkTransformPod(b *testing.B) {
	pods := make([]*corev1.Pod, 1024)
	for i := range pods {
		pods[i] = fatPod()
		pods[i].Name = strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// The transform keeps the input's maps and slices, so re-running it on
		// the same objects measures the same work.
		if _, err := TransformPod(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotUnchanged measures one autoscaling cycle's snapshot at
// 5,000 nodes and 150,000 pods when no event arrived since the last one.
func BenchmarkSnapshotUnchanged(b *testing.B) {
	s := loadedTracker(5000)
	s.InquiryResource()
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime()
	for range b.N {
		s.InquiryResource()
	}
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkSnapshotOnePercentChanged measures one cycle's snapshot at 5,000
// nodes and 150,000 pods after 1% of the pods (1,500) changed since the last
// one, each moved to another node. Only the snapshot is timed, not the
// events. spread: every 97th pod, a stride prime to the job and node counts,
// so the changes touch 2,067 nodes and 833 of the 1,000 jobs, the worst case
// for a copy that shares unchanged jobs. wave: 1,000 trainers of 10 jobs
// (a wave that rescheduled them) and 500 other pods, which touch 622 nodes.
func BenchmarkSnapshotOnePercentChanged(b *testing.B) {
	const nodes, changed = 5000, 1500
	spread := make([]int, changed)
	for k := range spread {
		spread[k] = k * 97
	}
	var wave []int
	for p := range nodes * 30 {
		if job := p % (nodes / 5); p%3 != 0 && job%100 == 0 { // every trainer of jobs 0, 100, ... 900
			wave = append(wave, p)
		}
	}
	for p := 0; len(wave) < changed; p += 3 * 101 { // other pods
		wave = append(wave, p)
	}
	for _, bc := range []struct {
		name string
		pods []int
	}{{"spread", spread}, {"wave", wave}} {
		b.Run(bc.name, func(b *testing.B) {
			s := loadedTracker(nodes)
			s.InquiryResource()
			var versions [2][]*corev1.Pod
			for _, i := range bc.pods {
				versions[0] = append(versions[0], loadedPod(nodes, i, (i+1)%nodes, "a"))
				versions[1] = append(versions[1], loadedPod(nodes, i, i%nodes, "b"))
			}
			b.ReportAllocs()
			b.ResetTimer()
			var cpu time.Duration
			for i := range b.N {
				b.StopTimer()
				for _, p := range versions[i%2] {
					s.onPod(p)
				}
				b.StartTimer()
				before := cpuTime()
				s.InquiryResource()
				cpu += cpuTime() - before
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
