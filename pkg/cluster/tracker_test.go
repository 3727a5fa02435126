package cluster

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// originalLine is the line the original EDL README shows for a minikube.
const originalLine = `resource="{NodeCount:1 GPURequest:0 GPULimit:0 GPUTotal:0 CPURequestMilli:265 CPULimitMilli:0 CPUTotalMilli:2000 MemoryRequestMega:168 MemoryLimitMega:179 MemoryTotalMega:1993 Nodes:{NodesCPUIdleMilli:map[minikube:1735] NodesMemoryFreeMega:map[minikube:1824]}}"`

func TestInquiryResourceLogLineKeepsOriginalShape(t *testing.T) {
	var recs []*log15.Record
	log := log15.New()
	// LazyHandler is what log15's StreamHandler puts in front of a writer.
	log.SetHandler(log15.LazyHandler(log15.FuncHandler(func(r *log15.Record) error { recs = append(recs, r); return nil })))
	s := newTracker(Config{Logger: log})
	// 2041048Ki is 1993.2 MiB; 172544Ki is 168.5 MiB, so the request floors to
	// 168 and the free memory to 1824, exactly the README's numbers.
	s.onNode(newNode("minikube", "2", "2041048Ki"))
	s.onPod(newPod("dns", onNode("minikube"), withRequests("265m", "172544Ki"), withLimits("", "179Mi")))

	s.InquiryResource()

	require.Len(t, recs, 1)
	assert.Equal(t, log15.LvlDebug, recs[0].Lvl)
	line := string(log15.LogfmtFormat().Format(recs[0]))
	assert.Contains(t, line, `msg="Cluster.InquiryResource done" resource="{NodeCount:1 `)
	want := `resource="{NodeCount:1 GPURequest:0 GPULimit:0 GPUTotal:0 CPURequestMilli:265 CPULimitMilli:0 CPUTotalMilli:2000 ` +
		`MemoryRequestMega:168 MemoryLimitMega:179 MemoryTotalMega:1993 Nodes:{NodesCPUIdleMilli:map[minikube:1735] ` +
		`NodesMemoryFreeMega:map[minikube:1824] NodesGPUFree:map[minikube:0]} Pending:[0 pods] Trainers:[0 jobs, 0 pods]}"`
	assert.Contains(t, line, want)
	prefix := strings.TrimSuffix(originalLine, `}}"`)
	assert.True(t, strings.HasPrefix(want, prefix), "the original line's prefix must survive:\n%s\n%s", prefix, want)

	// Through the handler cmd/edl uses, a filtered-out debug line costs no
	// formatting, and an enabled one reads the same.
	var buf bytes.Buffer
	log.SetHandler(log15.LvlFilterHandler(log15.LvlDebug, log15.StreamHandler(&buf, log15.LogfmtFormat())))
	s.InquiryResource()
	assert.Contains(t, buf.String(), want)
}

func TestInquiryResourceSummarisesPendingAndTrainers(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "4", "8Gi"))
	s.onPod(newPod("a-0", trainerOf("a"), onNode("n1"), withRequests("1", "1Gi")))
	s.onPod(newPod("a-1", trainerOf("a"), unschedulablePod(), withRequests("1", "1Gi")))
	got := s.InquiryResource().String()
	assert.True(t, strings.HasSuffix(got, "Pending:[1 pods] Trainers:[1 jobs, 2 pods]}"), got)
}

// TestASnapshotNeverChangesOnceHandedOut: the next Snapshot shares what did
// not change with the previous one, so the tracker must never write into a
// Snapshot it handed out: every kind of event leaves the earlier one as it
// was, and the new one reports the change.
func TestASnapshotNeverChangesOnceHandedOut(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "4", "8Gi"))
	s.onNode(newNode("n2", "4", "8Gi"))
	s.onPod(newPod("a-0", trainerOf("a"), onNode("n1"), withRequests("1", "1Gi")))
	s.onPod(newPod("b-0", trainerOf("b"), onNode("n2"), withRequests("1", "1Gi")))
	s.onPod(newPod("p", unschedulablePod(), withRequests("8", "1Gi")))
	s.onPod(newPod("q", onNode("n2"), withRequests("1", "1Gi"), terminating()))
	s.onQuota(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}})

	first := s.InquiryResource()
	want := first.DeepCopy()
	unchanged := s.InquiryResource()
	assert.Equal(t, want, unchanged)
	assert.Same(t, &first.Nodes[0], &unchanged.Nodes[0], "nothing changed: the nodes are shared")
	assert.Same(t, &first.Trainers["ns/a"][0], &unchanged.Trainers["ns/a"][0], "nothing changed: the trainers are shared")

	s.onPod(newPod("a-0", trainerOf("a"), onNode("n2"), withRequests("2", "1Gi"), withRV("2")))
	s.onPod(newPod("a-1", trainerOf("a"), onNode("n1"), withRequests("1", "1Gi"), createdAt(time.Second)))
	s.onPodDelete(newPod("p"))
	s.onPod(newPod("r", unschedulablePod(), withRequests("9", "1Gi")))
	s.onPodDelete(newPod("q"))
	s.onNode(newNode("n1", "8", "8Gi", nodeRV("2")))
	s.onQuotaDelete(cache.DeletedFinalStateUnknown{Key: "ns/q"})
	next := s.InquiryResource()
	assert.Equal(t, want, first, "the first snapshot changed under its reader")
	assert.Equal(t, want, unchanged, "the second snapshot changed under its reader")
	assert.Len(t, next.Trainers["ns/a"], 2)
	assert.Equal(t, "r", next.Pending[0].Name)
	assert.Empty(t, next.Quotas)
	assert.Equal(t, map[string]int64{"n1": 8000 - 1000, "n2": 4000 - 2000 - 1000}, next.NodeResources().NodesCPUIdleMilli)
	assert.Same(t, &first.Trainers["ns/b"][0], &next.Trainers["ns/b"][0], "job b did not change")

	s.onNode(newNode("n3", "4", "8Gi"))
	s.onNode(newNode("n2", "4", "8Gi", cordoned(), nodeRV("3")))
	before := next.DeepCopy()
	last := s.InquiryResource()
	assert.Equal(t, before, next, "a change of the node set rewrote an earlier snapshot")
	assert.Equal(t, []string{"n1", "n3"}, []string{last.Nodes[0].Name, last.Nodes[1].Name})
}

// snapState is the part of Snapshot the lifecycle tables compare.
type snapState struct {
	nodes, cpuReq, cpuTotal, memReq, idleCPU int64
	pending, trainers                        int
}

func stateOf(r snapshot.Snapshot, node string) snapState {
	trainers := 0
	for _, t := range r.Trainers {
		trainers += len(t)
	}
	return snapState{
		nodes: int64(r.NodeCount), cpuReq: r.CPURequestMilli, cpuTotal: r.CPUTotalMilli, memReq: r.MemoryRequestMega,
		idleCPU: r.NodeResources().NodesCPUIdleMilli[node], pending: len(r.Pending), trainers: trainers,
	}
}

func TestPodLifecycleUpdatesAggregatesIncrementally(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "4", "8Gi"))
	base := []podMutator{trainerOf("job"), withRequests("1500m", "1Gi")}
	steps := []struct {
		name  string
		event func()
		want  snapState
	}{
		// A pod is load once it is bound to a node that counts.
		{"created, not yet scheduled", func() { s.onPod(newPod("t", append(base, withPhase(corev1.PodPending), withRV("1"))...)) },
			snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 0, trainers: 1}},
		{"unschedulable", func() { s.onPod(newPod("t", append(base, unschedulablePod(), withRV("2"))...)) },
			snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 1, trainers: 1}},
		{"bound, still Pending", func() { s.onPod(newPod("t", append(base, withPhase(corev1.PodPending), onNode("n1"), withRV("3"))...)) },
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 1}},
		{"Running", func() { s.onPod(newPod("t", append(base, onNode("n1"), withRV("4"))...)) },
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 1}},
		{"resync with the same resourceVersion changes nothing", func() { s.onPod(newPod("t", append(base, onNode("n1"), withRV("4"))...)) },
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 1}},
		{"terminating still holds the node but is no trainer", func() { s.onPod(newPod("t", append(base, onNode("n1"), terminating(), withRV("5"))...)) },
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 0}},
		{"Succeeded frees everything", func() {
			s.onPod(newPod("t", append(base, onNode("n1"), withPhase(corev1.PodSucceeded), withRV("6"))...))
		}, snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 0, trainers: 0}},
		{"deleted", func() { s.onPodDelete(newPod("t", append(base, onNode("n1"), withPhase(corev1.PodSucceeded))...)) },
			snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 0, trainers: 0}},
	}
	for _, st := range steps {
		st.event()
		assert.Equal(t, st.want, stateOf(s.InquiryResource(), "n1"), st.name)
	}
	assert.Empty(t, s.pods)
}

func TestPodUpdateMovesContributionBetweenNodes(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "4", "8Gi"))
	s.onNode(newNode("n2", "4", "8Gi"))
	s.onPod(newPod("p", onNode("n1"), withRequests("1", "1Gi")))
	// An update whose old object is unknown or stale must still subtract what
	// was added, which is why the snapshot remembers contributions itself.
	s.onPod(newPod("p", onNode("n2"), withRequests("2", "1Gi"), withRV("2")))
	r := s.InquiryResource()
	assert.Equal(t, map[string]int64{"n1": 4000, "n2": 2000}, r.NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, int64(2000), r.CPURequestMilli)
}

func TestNodesCountOnlyWhenReadyAndSchedulable(t *testing.T) {
	tests := []struct {
		name      string
		node      *corev1.Node
		wantCount int
		wantTotal int64
	}{
		{"ready", newNode("n", "4", "8Gi"), 1, 4000},
		{"not ready", newNode("n", "4", "8Gi", notReady()), 0, 0},
		{"no Ready condition", newNode("n", "4", "8Gi", func(n *corev1.Node) { n.Status.Conditions = nil }), 0, 0},
		{"cordoned", newNode("n", "4", "8Gi", cordoned()), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTracker(Config{})
			s.onNode(newNode("other", "2", "2Gi"))
			s.onNode(tt.node)
			r := s.InquiryResource()
			assert.Equal(t, 1+tt.wantCount, r.NodeCount)
			assert.Equal(t, 2000+tt.wantTotal, r.CPUTotalMilli)
			_, listed := r.NodeResources().NodesCPUIdleMilli["n"]
			assert.Equal(t, tt.wantCount == 1, listed)
		})
	}
}

func TestNodeLifecycle(t *testing.T) {
	s := newTracker(Config{})
	// A pod seen before its node: its request must be waiting when the node
	// arrives.
	s.onPod(newPod("early", onNode("n1"), withRequests("1", "1Gi")))
	r := s.InquiryResource()
	assert.Equal(t, 0, r.NodeCount)
	assert.Empty(t, r.NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, int64(0), r.CPURequestMilli, "a pod on a node that does not count is no load")

	s.onNode(newNode("n1", "4", "8Gi"))
	assert.Equal(t, map[string]int64{"n1": 3000}, s.InquiryResource().NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, int64(1000), s.InquiryResource().CPURequestMilli)

	s.onNode(newNode("n1", "4", "8Gi", notReady(), nodeRV("2")))
	r = s.InquiryResource()
	assert.Equal(t, 0, r.NodeCount)
	assert.Equal(t, int64(0), r.CPUTotalMilli)
	assert.Equal(t, int64(0), r.CPURequestMilli, "a NotReady node takes its pods' requests out with its allocatable")

	s.onNode(newNode("n1", "8", "8Gi", nodeRV("3")))
	assert.Equal(t, map[string]int64{"n1": 7000}, s.InquiryResource().NodeResources().NodesCPUIdleMilli)

	s.onNodeDelete(newNode("n1", "8", "8Gi"))
	r = s.InquiryResource()
	assert.Equal(t, 0, r.NodeCount)
	assert.Equal(t, int64(0), r.CPUTotalMilli)
	assert.Empty(t, r.NodeResources().NodesCPUIdleMilli)

	// The node comes back under the same name: the pod bound to it still
	// counts exactly once.
	s.onNode(newNode("n1", "4", "8Gi", nodeRV("9")))
	assert.Equal(t, map[string]int64{"n1": 3000}, s.InquiryResource().NodeResources().NodesCPUIdleMilli)

	s.onPodDelete(newPod("early", onNode("n1")))
	s.onNodeDelete(newNode("n1", "4", "8Gi"))
	assert.Empty(t, s.nodes, "no state may leak once node and pods are gone")
}

func TestTombstonesAreUnwrapped(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "4", "8Gi"))
	s.onNode(newNode("n2", "4", "8Gi"))
	s.onPod(newPod("p", onNode("n1"), withRequests("1", "1Gi")))

	s.onPodDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: newPod("p", onNode("n1"))})
	s.onNodeDelete(cache.DeletedFinalStateUnknown{Key: "n2", Obj: newNode("n2", "4", "8Gi")})
	// A tombstone whose final state is stale or missing is still keyed right.
	s.onPodDelete(cache.DeletedFinalStateUnknown{Key: "ns/unknown"})

	r := s.InquiryResource()
	assert.Equal(t, int64(0), r.CPURequestMilli)
	assert.Equal(t, map[string]int64{"n1": 4000}, r.NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, 1, r.NodeCount)
}

func TestRequestsAndLimitsFollowTheScheduler(t *testing.T) {
	tests := []struct {
		name             string
		pod              *corev1.Pod
		wantReq, wantLim amounts
	}{
		{"containers are summed",
			newPod("p", withRequests("1", "1Mi"), withContainer("500m", "2Mi")),
			amounts{cpuMilli: 1500, memBytes: 3 * mebi}, amounts{}},
		{"init containers take the max, not the sum (the original summed them)",
			newPod("p", withRequests("1", "1Mi"), withInit("2", "1Mi"), withInit("3", "1Mi")),
			amounts{cpuMilli: 3000, memBytes: mebi}, amounts{}},
		{"init containers smaller than the app do not count",
			newPod("p", withRequests("4", "8Mi"), withInit("2", "1Mi")),
			amounts{cpuMilli: 4000, memBytes: 8 * mebi}, amounts{}},
		{"sidecars add to the running sum",
			newPod("p", withRequests("1", "1Mi"), withSidecar("500m", "1Mi")),
			amounts{cpuMilli: 1500, memBytes: 2 * mebi}, amounts{}},
		{"an init container after a sidecar runs alongside it",
			newPod("p", withRequests("1", "1Mi"), withSidecar("1", "1Mi"), withInit("3", "1Mi")),
			amounts{cpuMilli: 4000, memBytes: 2 * mebi}, amounts{}},
		{"an init container before a sidecar does not",
			newPod("p", withRequests("1", "1Mi"), withInit("3", "1Mi"), withSidecar("1", "1Mi")),
			amounts{cpuMilli: 3000, memBytes: 2 * mebi}, amounts{}},
		{"overhead is added to requests, and to limits only where set",
			newPod("p", withRequests("1", "1Mi"), withLimits("2", ""), withOverhead("250m", "1Mi")),
			amounts{cpuMilli: 1250, memBytes: 2 * mebi}, amounts{cpuMilli: 2250}},
		{"pod-level resources replace the container aggregate",
			newPod("p", withRequests("1", "1Mi"), func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("3", ""), Limits: rl("", "5Mi")}
			}),
			amounts{cpuMilli: 3000, memBytes: mebi}, amounts{memBytes: 5 * mebi}},
		{"GPUs", newPod("p", withGPU(2)), amounts{gpu: 2}, amounts{gpu: 2}},
	}
	rr := resourceReader{gpuNames: []corev1.ResourceName{DefaultGPUResourceName}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, lim := rr.podRequestsAndLimits(podResources(&tt.pod.Spec))
			assert.Equal(t, tt.wantReq, req)
			assert.Equal(t, tt.wantLim, lim)
		})
	}
}

func TestGPUResourceNamesAreConfigurable(t *testing.T) {
	amd := corev1.ResourceName("amd.com/gpu")
	s := newTracker(Config{GPUResourceNames: []corev1.ResourceName{DefaultGPUResourceName, amd}})
	s.onNode(newNode("n1", "4", "8Gi", nodeGPU(4), func(n *corev1.Node) {
		n.Status.Allocatable[amd] = *resource.NewQuantity(2, resource.DecimalSI)
	}))
	s.onPod(newPod("p", onNode("n1"), withGPU(1), func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[amd] = *resource.NewQuantity(1, resource.DecimalSI)
	}))
	r := s.InquiryResource()
	assert.Equal(t, int64(6), r.GPUTotal)
	assert.Equal(t, int64(2), r.GPURequest)
	assert.Equal(t, map[string]int64{"n1": 4}, r.NodeResources().NodesGPUFree)
}

func TestPendingAndTrainersAreReportedInOrder(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "4", "8Gi"))
	s.onPod(newPod("low", unschedulablePod(), withPriority(1), withRequests("8", "1Gi"), func(p *corev1.Pod) {
		p.Status.NominatedNodeName = "n1"
	}))
	s.onPod(newPod("high-new", unschedulablePod(), withPriority(1000), createdAt(2), withRequests("8", "1Gi")))
	s.onPod(newPod("high-old", unschedulablePod(), withPriority(1000), createdAt(1), withRequests("8", "1Gi"), trainerOf("a")))
	s.onPod(newPod("a-new", trainerOf("a"), onNode("n1"), createdAt(5), withRequests("1", "1500Ki")))
	s.onPod(newPod("a-old", trainerOf("a"), onNode("n1"), withPhase(corev1.PodPending), createdAt(3), withRequests("1", "1Gi")))
	s.onPod(newPod("a-done", trainerOf("a"), onNode("n1"), withPhase(corev1.PodFailed)))
	s.onPod(newPod("pserver", withLabel(v1.LabelPserver, "a"), onNode("n1")))
	s.onPod(newPod("b-pserver", memberOf("b", v1.RolePserver), unschedulablePod(), withPriority(1), createdAt(6)))
	s.onPod(newPod("c-master", memberOf("c", v1.RoleMaster), unschedulablePod(), withPriority(1), createdAt(7)))

	r := s.InquiryResource()
	var names []string
	for _, p := range r.Pending {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"high-old", "high-new", "low", "b-pserver", "c-master"}, names)
	assert.Equal(t, "ns/a", r.Pending[0].Job)
	assert.True(t, r.Pending[0].Trainer)
	assert.Equal(t, "", r.Pending[1].Job, "not a TrainingJob's pod")
	assert.Equal(t, "ns/b", r.Pending[3].Job, "a pserver belongs to its job")
	assert.False(t, r.Pending[3].Trainer)
	assert.Equal(t, "ns/c", r.Pending[4].Job, "a master belongs to its job")
	assert.False(t, r.Pending[4].Trainer)
	assert.Equal(t, "n1", r.Pending[2].NominatedNode)
	assert.Equal(t, snapshot.Resources{CPUMilli: 8000, MemoryMega: 1024}, r.Pending[0].Request)

	require.Len(t, r.Trainers["ns/a"], 3)
	assert.Equal(t, []snapshot.TrainerPod{
		{Name: "high-old", Phase: corev1.PodPending, Unschedulable: true, Created: t0.Add(1), Request: snapshot.Resources{CPUMilli: 8000, MemoryMega: 1024}, Priority: 1000},
		{Name: "a-old", Node: "n1", Phase: corev1.PodPending, Created: t0.Add(3), Request: snapshot.Resources{CPUMilli: 1000, MemoryMega: 1024}},
		// 1500Ki rounds up to 2 MiB so that a planner never under-reserves.
		{Name: "a-new", Node: "n1", Phase: corev1.PodRunning, Created: t0.Add(5), Request: snapshot.Resources{CPUMilli: 1000, MemoryMega: 2}},
	}, r.Trainers["ns/a"])
	assert.True(t, r.Trainers["ns/a"][2].Running())
	assert.Equal(t, r.Trainers["ns/a"], r.TrainerPods("ns/a"))
}

func TestTrainersStayOrderedAcrossEvents(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "64", "64Gi"))
	// Created out of order, some in the same second.
	for _, p := range []struct {
		name string
		at   time.Duration
	}{{"e", 5}, {"b", 1}, {"d", 3}, {"a", 1}, {"c", 3}} {
		s.onPod(newPod(p.name, trainerOf("job"), withPhase(corev1.PodPending), createdAt(p.at*time.Second)))
	}
	s.onPod(newPod("c", trainerOf("job"), onNode("n1"), createdAt(3*time.Second), withRV("2")))
	s.onPodDelete(newPod("d", trainerOf("job")))
	s.onPod(newPod("b", trainerOf("job"), onNode("n1"), terminating(), createdAt(time.Second), withRV("2")))

	var names []string
	for _, p := range s.InquiryResource().Trainers["ns/job"] {
		names = append(names, p.Name+"@"+p.Node)
	}
	assert.Equal(t, []string{"a@", "c@n1", "e@"}, names)
}

// TestTerminatingPodsAreReportedPerNode: a pod being deleted still holds its
// node and is listed there with its deletion timestamp until it is gone; a
// terminating trainer is no trainer of its job any more.
func TestTerminatingPodsAreReportedPerNode(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "64", "64Gi"))
	s.onPod(newPod("t1", trainerOf("job"), onNode("n1"), withRequests("1", "1Gi"), withRV("1")))
	s.onPod(newPod("web", onNode("n1"), withRequests("2", "1Gi"), withRV("1")))
	assert.Empty(t, s.InquiryResource().Nodes[0].Terminating)

	s.onPod(newPod("t1", trainerOf("job"), onNode("n1"), withRequests("1", "1Gi"), terminating(), withRV("2")))
	s.onPod(newPod("web", onNode("n1"), withRequests("2", "1Gi"), terminating(), withRV("2")))
	r := s.InquiryResource()
	assert.ElementsMatch(t, []snapshot.TerminatingPod{
		{Request: snapshot.Resources{CPUMilli: 1000, MemoryMega: 1024}, Deadline: t0, Trainer: true},
		{Request: snapshot.Resources{CPUMilli: 2000, MemoryMega: 1024}, Deadline: t0},
	}, r.Nodes[0].Terminating)
	assert.Equal(t, int64(64000-3000), r.Nodes[0].Free.CPUMilli, "they still hold their node")
	assert.Empty(t, r.Trainers["ns/job"], "but it is no trainer of the job any more")

	s.onPodDelete(newPod("t1", trainerOf("job")))
	s.onPodDelete(newPod("web"))
	assert.Empty(t, s.InquiryResource().Nodes[0].Terminating)
}

// TestOnlyTheJobsReplicaSetsPodsAreItsPods: a pod that carries a job's
// label but that the job's ReplicaSet does not control is an ordinary pod: it
// is no trainer and makes no claim for the job.
func TestOnlyTheJobsReplicaSetsPodsAreItsPods(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "8", "8Gi"))
	s.onPod(newPod("t", trainerOf("job"), onNode("n1"), withRequests("1", "1Gi")))
	s.onPod(newPod("stray", withLabel(v1.LabelTrainer, "job"), onNode("n1"), withRequests("1", "1Gi")))
	s.onPod(newPod("stray-pending", withLabel(v1.LabelPserver, "job"), unschedulablePod(), withRequests("1", "1Gi")))
	s.onPod(newPod("wrong-role", memberOf("job", v1.RolePserver), withLabel(v1.LabelPserver, ""), withLabel(v1.LabelTrainer, "job"),
		onNode("n1")))
	r := s.InquiryResource()
	require.Len(t, r.Trainers["ns/job"], 1)
	assert.Equal(t, "t", r.Trainers["ns/job"][0].Name)
	require.Len(t, r.Pending, 1)
	assert.Empty(t, r.Pending[0].Job)
	assert.Equal(t, int64(2000), r.CPURequestMilli, "the stray is load like any pod")
}

func TestUnschedulablePodsKeepWhereTheyMayRun(t *testing.T) {
	s := newTracker(Config{})
	never := corev1.PreemptNever
	p := newPod("gpu", unschedulablePod(), withRequests("1", "1Gi"))
	p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
	p.Spec.PreemptionPolicy = &never
	obj, err := TransformPod(p)
	require.NoError(t, err)
	s.onPod(obj)
	r := s.InquiryResource()
	require.Len(t, r.Pending, 1)
	require.NotNil(t, r.Pending[0].Placement)
	assert.Equal(t, map[string]string{"pool": "gpu"}, r.Pending[0].Placement.NodeSelector)
	assert.Len(t, r.Pending[0].Placement.Tolerations, 1)
	assert.True(t, r.Pending[0].PreemptNever)

	bound := p.DeepCopy()
	bound.Spec.NodeName = "n1"
	obj, err = TransformPod(bound)
	require.NoError(t, err)
	assert.Nil(t, obj.(*Pod).Scheduling, "a bound pod's placement is not kept")
}

func TestQuotasAreTrackedPerNamespace(t *testing.T) {
	s := newTracker(Config{})
	quota := func(name, cpu, used string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu)}},
			Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(used)}}}
	}
	assert.Equal(t, snapshot.NoQuota, s.InquiryResource().Quota("team"))
	s.onQuota(quota("a", "10", "4"))
	s.onQuota(quota("b", "8", "4"))
	assert.Equal(t, int64(4000), s.InquiryResource().Quota("team").Requests.CPUMilli, "the tightest quota")
	s.onQuotaDelete(cache.DeletedFinalStateUnknown{Key: "team/b"})
	assert.Equal(t, int64(6000), s.InquiryResource().Quota("team").Requests.CPUMilli)
	assert.Equal(t, snapshot.NoQuota, s.InquiryResource().Quota("other"))
	s.onQuotaDelete(quota("a", "10", "4"))
	assert.Empty(t, s.InquiryResource().Quotas)
}

func TestUnplacedJobPodsAreReported(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "8", "8Gi"))
	gatedPod := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1.SchedulingGateAdmission}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonSchedulingGated}}
	}
	untried := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	s.onPod(newPod("gated-pserver", memberOf("q", v1.RolePserver), gatedPod, createdAt(2), withRequests("1", "1Gi")))
	s.onPod(newPod("gated-trainer", trainerOf("q"), gatedPod, createdAt(1), withRequests("2", "1Gi")))
	s.onPod(newPod("untried-master", memberOf("r", v1.RoleMaster), untried, createdAt(3)))
	s.onPod(newPod("unschedulable", memberOf("r", v1.RolePserver), unschedulablePod()))
	s.onPod(newPod("bound", trainerOf("r"), onNode("n1")))
	s.onPod(newPod("going", memberOf("r", v1.RolePserver), untried, terminating()))
	s.onPod(newPod("not-a-job-pod", untried))

	r := s.InquiryResource()
	var names []string
	for _, p := range r.Unplaced {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"gated-trainer", "gated-pserver", "untried-master"}, names, "oldest first")
	assert.Equal(t, "ns/q", r.Unplaced[0].Job)
	assert.True(t, r.Unplaced[0].Trainer)
	assert.Equal(t, snapshot.Resources{CPUMilli: 2000, MemoryMega: 1024}, r.Unplaced[0].Request)
	require.Len(t, r.Pending, 1)
	assert.Equal(t, "unschedulable", r.Pending[0].Name)
	assert.Equal(t, int64(8000), r.Idle().CPUMilli, "unplaced pods are no load")

	// Bound, it leaves the list.
	s.onPod(newPod("untried-master", memberOf("r", v1.RoleMaster), onNode("n1"), withRV("2"), createdAt(3)))
	assert.Len(t, s.InquiryResource().Unplaced, 2)
}
