package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/controller"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	"github.com/paddlepaddle/edl/pkg/watch"
)

// simChangeShare is the share of the pods that change between two cycles.
const simChangeShare = 100 // one pod in 100

// BenchmarkSimulatedCluster runs edl's informers (with cmd/edl's
// transforms), the controller's pod index and event handlers, the tracker
// and the autoscaler on a simulated cluster of 300, 2,000 and 10,000 nodes
// with 15 pods a node (simCluster), without an API server: a fake clientset
// lists the objects and a fake watch delivers the pod events. One op is one
// autoscaling cycle after 1% of the pods changed: that many trainers move
// between running on their node and not bound yet, as in a wave, sent
// through the pod informer's watch. The autoscaler plans in dry-run mode:
// it decides as edl does and patches nothing. It reports:
//
//   - heap-MiB: the live heap the informers' caches, the tracker and the
//     controller hold once synced and after a first cycle;
//   - cycle-ms and cycle-cpu-ms: the snapshot and plan of the cycle after
//     the changes, as edl_autoscaler_plan_duration_seconds measures it (wall
//     time), and the CPU time of the whole RunOnce (steadier on a shared
//     machine). Should the tracker not have handled every event when the
//     cycle starts, the next cycle is counted too (cycles/op says how often);
//   - quiet-cycle-ms: a cycle when nothing changed since the last one;
//   - event-cpu-us: the CPU time of one pod update event, from the watch
//     through the informer (transform, store, index) to every handler.
//
// BenchmarkPodDecode adds what decoding the event costs.
func BenchmarkSimulatedCluster(b *testing.B) {
	for _, nodes := range []int{300, 2000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchSimulated(b, simCluster{nodes: nodes}) })
	}
}

// planRecorder keeps what the autoscaler reports of each cycle.
type planRecorder struct {
	took time.Duration
	snap snapshot.Snapshot
}

func (r *planRecorder) Planned(took time.Duration, snap snapshot.Snapshot, _ []planner.Job) {
	r.took, r.snap = took, snap
}
func (r *planRecorder) Scaled(planner.ScaleAction)            {}
func (r *planRecorder) Explained([]planner.Explanation)       {}
func (r *planRecorder) ScaleFailed(planner.ScaleAction, bool) {}
func (r *planRecorder) Queued([]time.Duration)                {}
func (r *planRecorder) Admitted(time.Duration)                {}
func (r *planRecorder) Requeued(bool)                         {}
func (r *planRecorder) Teams([]planner.TeamShare)             {}

// sentinel is the pod whose update ends a batch of events: once the tracker
// shows it at resourceVersion rv, it has handled the batch before it.
func sentinel(c simCluster, rv int) *corev1.Pod {
	job := c.job(0)
	p := c.trainer(job, c.replicaSet(job, v1.RoleTrainer), simPodsPerJob, 0, strconv.Itoa(rv))
	p.Name = "sentinel"
	if rv%2 == 1 {
		unbound(p, false)
	}
	return p
}

func sentinelSeen(snap snapshot.Snapshot, rv int) bool {
	for _, p := range snap.Trainers["team-00/job-0000"] {
		if p.Name == "sentinel" {
			return (p.Node == "") == (rv%2 == 1)
		}
	}
	return false
}

func benchSimulated(b *testing.B, c simCluster) {
	discard := log.New()
	discard.SetHandler(log.DiscardHandler())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := heap()

	kube := fake.NewClientset()
	for _, r := range []string{"nodes", "pods", "replicasets", "services"} {
		kube.PrependReactor("list", r, func(a clienttesting.Action) (bool, kruntime.Object, error) {
			return true, c.list(a.GetResource().Resource), nil
		})
	}
	podWatch := kwatch.NewFakeWithChanSize(1024, false)
	kube.PrependWatchReactor("pods", func(clienttesting.Action) (bool, kwatch.Interface, error) { return true, podWatch, nil })
	tj := tjfake.NewClientset()
	tj.PrependReactor("list", "trainingjobs", func(clienttesting.Action) (bool, kruntime.Object, error) {
		return true, c.jobList(), nil
	})

	opts, err := parseFlags(nil, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	planner := opts.effective.Planner()
	planner.DryRun, planner.GangAdmission = true, false // a dry run admits nothing
	w, err := watch.New(kube, tj, opts.resync, planner.GPUResources, discard)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := controller.New(controller.Config{KubeClient: kube, TJClient: tj, JobInformer: w.Jobs,
		ReplicaSetInformer: w.ReplicaSets, ServiceInformer: w.KubeInformers.Core().V1().Services(), PodInformer: w.Pods,
		ConfigMapInformer: w.KubeInformers.Core().V1().ConfigMaps(),
		PDBInformer:       w.PDBs,
		Recorder:          record.NewFakeRecorder(0), Logger: discard, GPUResources: w.GPUs, StatusInterval: planner.Interval}); err != nil {
		b.Fatal(err)
	}
	plans := &planRecorder{}
	scaler := w.Autoscaler(planner, kube, tj, record.NewFakeRecorder(0), discard, plans)
	var seen atomic.Int64 // the sentinel's last resourceVersion the informer delivered
	if _, err := w.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		if p := obj.(*cluster.Pod); p.Name == "sentinel" {
			rv, _ := strconv.Atoi(p.ResourceVersion)
			seen.Store(int64(rv))
		}
	}}); err != nil {
		b.Fatal(err)
	}
	w.Start(ctx)
	defer func() {
		cancel() // the informers stop only once their context is done
		w.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), w.Tracker.HasSynced, w.Jobs.Informer().HasSynced, w.ReplicaSets.Informer().HasSynced,
		w.KubeInformers.Core().V1().Services().Informer().HasSynced, w.KubeInformers.Scheduling().V1().PriorityClasses().Informer().HasSynced) {
		b.Fatal("the informers did not sync")
	}
	podWatch.Add(sentinel(c, 0))
	waitFor(b, func() bool { return seen.Load() == 0 && sentinelSeen(w.Tracker.InquiryResource(), 0) })
	scaler.RunOnce(ctx)
	if got := len(w.Pods.Informer().GetStore().ListKeys()); got != c.pods()+1 {
		b.Fatalf("%d pods cached, want %d", got, c.pods()+1)
	}
	if len(plans.snap.Trainers) != c.jobs() || plans.snap.NodeCount != c.nodes || len(plans.snap.Pending) == 0 {
		b.Fatalf("the tracker counts %d jobs, %d nodes, %d pending pods", len(plans.snap.Trainers), plans.snap.NodeCount, len(plans.snap.Pending))
	}
	heapMiB := float64(heap()-base) / (1 << 20)

	// Two versions of every pod that changes: not bound yet, and running on
	// its node. One pod in simChangeShare, all trainers, spread evenly over
	// the jobs.
	var versions [2][]*corev1.Pod
	trainers := c.jobs() * (simPodsPerJob - 1)
	stride := max(trainers/(c.pods()/simChangeShare), 1)
	for t := 0; t < trainers; t += stride {
		i, k := t/(simPodsPerJob-1), t%(simPodsPerJob-1)
		job := c.job(i)
		rs := c.replicaSet(job, v1.RoleTrainer)
		versions[0] = append(versions[0], c.trainer(job, rs, k, -1, "a"))
		versions[1] = append(versions[1], c.trainer(job, rs, k, i*simPodsPerJob+1+k, "b"))
	}
	runtime.GC()
	var eventCPU, cycleWall, cycleCPU time.Duration
	events, cycles := 0, 0
	b.ResetTimer()
	for i := range b.N {
		rv := i + 1
		before := cpuTime()
		for _, p := range versions[i%2] {
			podWatch.Modify(p)
		}
		podWatch.Modify(sentinel(c, rv))
		waitFor(b, func() bool { return seen.Load() == int64(rv) })
		eventCPU += cpuTime() - before
		events += len(versions[i%2]) + 1

		before = cpuTime()
		for {
			scaler.RunOnce(ctx)
			cycleWall += plans.took
			cycles++
			if sentinelSeen(plans.snap, rv) {
				break
			}
		}
		cycleCPU += cpuTime() - before
	}
	b.StopTimer()
	scaler.RunOnce(ctx) // nothing changed since the last cycle
	b.ReportMetric(float64(plans.took.Microseconds())/1000, "quiet-cycle-ms")
	b.ReportMetric(float64(cycles)/float64(b.N), "cycles/op")
	b.ReportMetric(heapMiB, "heap-MiB")
	b.ReportMetric(float64(cycleWall.Microseconds())/1000/float64(b.N), "cycle-ms")
	b.ReportMetric(float64(cycleCPU.Microseconds())/1000/float64(b.N), "cycle-cpu-ms")
	b.ReportMetric(float64(eventCPU.Nanoseconds())/1000/float64(events), "event-cpu-us")
	b.ReportMetric(float64(len(versions[0])), "pods-changed/op")
}

// waitFor polls cond until it holds; the informers deliver asynchronously.
func waitFor(b *testing.B, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("the informers did not deliver the events")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// cpuTime is the user and system CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPodDecode measures decoding one running trainer pod as it arrives
// in a watch event: protobuf, which edl's client asks for built-in types, and
// JSON, which it would use otherwise (and does for TrainingJobs).
func BenchmarkPodDecode(b *testing.B) {
	c := simCluster{nodes: 6}
	job := c.job(0)
	pod := c.trainer(job, c.replicaSet(job, v1.RoleTrainer), 0, 0, "123456")
	pod.APIVersion, pod.Kind = "v1", "Pod"
	for _, s := range []struct {
		name       string
		serializer kruntime.Serializer
	}{
		{"protobuf", protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)},
		{"json", json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})},
	} {
		b.Run(s.name, func(b *testing.B) {
			var buf bytes.Buffer
			if err := s.serializer.Encode(pod, &buf); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, _, err := s.serializer.Decode(data, nil, &corev1.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes")
		})
	}
}
