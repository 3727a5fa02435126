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

	"github.com/paddlepaddle/edl/pkg/testing/builders"
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
	s.onNode(builders.Node("minikube", "2", "2041048Ki"))
	s.onPod(builders.Pod("dns", builders.OnNode("minikube"), builders.Requests("265m", "172544Ki"), builders.Limits("", "179Mi")))

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
	s.onNode(builders.Node("n1", "4", "8Gi"))
	s.onPod(builders.Pod("a-0", builders.TrainerOf("a"), builders.OnNode("n1"), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("a-1", builders.TrainerOf("a"), builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Requests("1", "1Gi")))
	got := s.InquiryResource().String()
	assert.True(t, strings.HasSuffix(got, "Pending:[1 pods] Trainers:[1 jobs, 2 pods]}"), got)
}

// TestASnapshotNeverChangesOnceHandedOut: the next Snapshot shares what did
// not change with the previous one, so the tracker must never write into a
// Snapshot it handed out: every kind of event leaves the earlier one as it
// was, and the new one reports the change.
func TestASnapshotNeverChangesOnceHandedOut(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "4", "8Gi"))
	s.onNode(builders.Node("n2", "4", "8Gi"))
	s.onPod(builders.Pod("a-0", builders.TrainerOf("a"), builders.OnNode("n1"), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("b-0", builders.TrainerOf("b"), builders.OnNode("n2"), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("p", builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Requests("8", "1Gi")))
	s.onPod(builders.Pod("q", builders.OnNode("n2"), builders.Requests("1", "1Gi"), builders.Terminating()))
	s.onQuota(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}})

	first := s.InquiryResource()
	want := first.DeepCopy()
	unchanged := s.InquiryResource()
	assert.Equal(t, want, unchanged)
	assert.Same(t, &first.Nodes[0], &unchanged.Nodes[0], "nothing changed: the nodes are shared")
	assert.Same(t, &first.Trainers["ns/a"][0], &unchanged.Trainers["ns/a"][0], "nothing changed: the trainers are shared")

	s.onPod(builders.Pod("a-0", builders.TrainerOf("a"), builders.OnNode("n2"), builders.Requests("2", "1Gi"), builders.PodRV("2")))
	s.onPod(builders.Pod("a-1", builders.TrainerOf("a"), builders.OnNode("n1"), builders.Requests("1", "1Gi"), builders.CreatedAfter(time.Second)))
	s.onPodDelete(builders.Pod("p"))
	s.onPod(builders.Pod("r", builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Requests("9", "1Gi")))
	s.onPodDelete(builders.Pod("q"))
	s.onNode(builders.Node("n1", "8", "8Gi", builders.NodeRV("2")))
	s.onQuotaDelete(cache.DeletedFinalStateUnknown{Key: "ns/q"})
	next := s.InquiryResource()
	assert.Equal(t, want, first, "the first snapshot changed under its reader")
	assert.Equal(t, want, unchanged, "the second snapshot changed under its reader")
	assert.Len(t, next.Trainers["ns/a"], 2)
	assert.Equal(t, "r", next.Pending[0].Name)
	assert.Empty(t, next.Quotas)
	assert.Equal(t, map[string]int64{"n1": 8000 - 1000, "n2": 4000 - 2000 - 1000}, next.NodeResources().NodesCPUIdleMilli)
	assert.Same(t, &first.Trainers["ns/b"][0], &next.Trainers["ns/b"][0], "job b did not change")

	s.onNode(builders.Node("n3", "4", "8Gi"))
	s.onNode(builders.Node("n2", "4", "8Gi", builders.Cordoned(), builders.NodeRV("3")))
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
	s.onNode(builders.Node("n1", "4", "8Gi"))
	base := []builders.PodOption{builders.TrainerOf("job"), builders.Requests("1500m", "1Gi")}
	steps := []struct {
		name  string
		event func()
		want  snapState
	}{
		// A pod is load once it is bound to a node that counts.
		{"created, not yet scheduled", func() {
			s.onPod(builders.Pod("t", append(base, builders.Phase(corev1.PodPending), builders.PodRV("1"))...))
		},
			snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 0, trainers: 1}},
		{"unschedulable", func() {
			s.onPod(builders.Pod("t", append(base, builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.PodRV("2"))...))
		},
			snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 1, trainers: 1}},
		{"bound, still Pending", func() {
			s.onPod(builders.Pod("t", append(base, builders.Phase(corev1.PodPending), builders.OnNode("n1"), builders.PodRV("3"))...))
		},
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 1}},
		{"Running", func() { s.onPod(builders.Pod("t", append(base, builders.OnNode("n1"), builders.PodRV("4"))...)) },
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 1}},
		{"resync with the same resourceVersion changes nothing", func() { s.onPod(builders.Pod("t", append(base, builders.OnNode("n1"), builders.PodRV("4"))...)) },
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 1}},
		{"terminating still holds the node but is no trainer", func() {
			s.onPod(builders.Pod("t", append(base, builders.OnNode("n1"), builders.Terminating(), builders.PodRV("5"))...))
		},
			snapState{nodes: 1, cpuReq: 1500, cpuTotal: 4000, memReq: 1024, idleCPU: 2500, pending: 0, trainers: 0}},
		{"Succeeded frees everything", func() {
			s.onPod(builders.Pod("t", append(base, builders.OnNode("n1"), builders.Phase(corev1.PodSucceeded), builders.PodRV("6"))...))
		}, snapState{nodes: 1, cpuReq: 0, cpuTotal: 4000, memReq: 0, idleCPU: 4000, pending: 0, trainers: 0}},
		{"deleted", func() {
			s.onPodDelete(builders.Pod("t", append(base, builders.OnNode("n1"), builders.Phase(corev1.PodSucceeded))...))
		},
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
	s.onNode(builders.Node("n1", "4", "8Gi"))
	s.onNode(builders.Node("n2", "4", "8Gi"))
	s.onPod(builders.Pod("p", builders.OnNode("n1"), builders.Requests("1", "1Gi")))
	// An update whose old object is unknown or stale must still subtract what
	// was added, which is why the snapshot remembers contributions itself.
	s.onPod(builders.Pod("p", builders.OnNode("n2"), builders.Requests("2", "1Gi"), builders.PodRV("2")))
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
		{"ready", builders.Node("n", "4", "8Gi"), 1, 4000},
		{"not ready", builders.Node("n", "4", "8Gi", builders.NodeNotReady()), 0, 0},
		{"no Ready condition", builders.Node("n", "4", "8Gi", func(n *corev1.Node) { n.Status.Conditions = nil }), 0, 0},
		{"cordoned", builders.Node("n", "4", "8Gi", builders.Cordoned()), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTracker(Config{})
			s.onNode(builders.Node("other", "2", "2Gi"))
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
	s.onPod(builders.Pod("early", builders.OnNode("n1"), builders.Requests("1", "1Gi")))
	r := s.InquiryResource()
	assert.Equal(t, 0, r.NodeCount)
	assert.Empty(t, r.NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, int64(0), r.CPURequestMilli, "a pod on a node that does not count is no load")

	s.onNode(builders.Node("n1", "4", "8Gi"))
	assert.Equal(t, map[string]int64{"n1": 3000}, s.InquiryResource().NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, int64(1000), s.InquiryResource().CPURequestMilli)

	s.onNode(builders.Node("n1", "4", "8Gi", builders.NodeNotReady(), builders.NodeRV("2")))
	r = s.InquiryResource()
	assert.Equal(t, 0, r.NodeCount)
	assert.Equal(t, int64(0), r.CPUTotalMilli)
	assert.Equal(t, int64(0), r.CPURequestMilli, "a NotReady node takes its pods' requests out with its allocatable")

	s.onNode(builders.Node("n1", "8", "8Gi", builders.NodeRV("3")))
	assert.Equal(t, map[string]int64{"n1": 7000}, s.InquiryResource().NodeResources().NodesCPUIdleMilli)

	s.onNodeDelete(builders.Node("n1", "8", "8Gi"))
	r = s.InquiryResource()
	assert.Equal(t, 0, r.NodeCount)
	assert.Equal(t, int64(0), r.CPUTotalMilli)
	assert.Empty(t, r.NodeResources().NodesCPUIdleMilli)

	// The node comes back under the same name: the pod bound to it still
	// counts exactly once.
	s.onNode(builders.Node("n1", "4", "8Gi", builders.NodeRV("9")))
	assert.Equal(t, map[string]int64{"n1": 3000}, s.InquiryResource().NodeResources().NodesCPUIdleMilli)

	s.onPodDelete(builders.Pod("early", builders.OnNode("n1")))
	s.onNodeDelete(builders.Node("n1", "4", "8Gi"))
	assert.Empty(t, s.nodes, "no state may leak once node and pods are gone")
}

func TestTombstonesAreUnwrapped(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "4", "8Gi"))
	s.onNode(builders.Node("n2", "4", "8Gi"))
	s.onPod(builders.Pod("p", builders.OnNode("n1"), builders.Requests("1", "1Gi")))

	s.onPodDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: builders.Pod("p", builders.OnNode("n1"))})
	s.onNodeDelete(cache.DeletedFinalStateUnknown{Key: "n2", Obj: builders.Node("n2", "4", "8Gi")})
	// A tombstone whose final state is stale or missing is still keyed right.
	s.onPodDelete(cache.DeletedFinalStateUnknown{Key: "ns/unknown"})

	r := s.InquiryResource()
	assert.Equal(t, int64(0), r.CPURequestMilli)
	assert.Equal(t, map[string]int64{"n1": 4000}, r.NodeResources().NodesCPUIdleMilli)
	assert.Equal(t, 1, r.NodeCount)
}

func TestPendingAndTrainersAreReportedInOrder(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "4", "8Gi"))
	s.onPod(builders.Pod("low", builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Priority(1), builders.Requests("8", "1Gi"), func(p *corev1.Pod) {
		p.Status.NominatedNodeName = "n1"
	}))
	s.onPod(builders.Pod("high-new", builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Priority(1000), builders.CreatedAfter(2), builders.Requests("8", "1Gi")))
	s.onPod(builders.Pod("high-old", builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Priority(1000), builders.CreatedAfter(1), builders.Requests("8", "1Gi"), builders.TrainerOf("a")))
	s.onPod(builders.Pod("a-new", builders.TrainerOf("a"), builders.OnNode("n1"), builders.CreatedAfter(5), builders.Requests("1", "1500Ki")))
	s.onPod(builders.Pod("a-old", builders.TrainerOf("a"), builders.OnNode("n1"), builders.Phase(corev1.PodPending), builders.CreatedAfter(3), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("a-done", builders.TrainerOf("a"), builders.OnNode("n1"), builders.Phase(corev1.PodFailed)))
	s.onPod(builders.Pod("pserver", builders.Label(v1.LabelPserver, "a"), builders.OnNode("n1")))
	s.onPod(builders.Pod("b-pserver", builders.MemberOf("b", v1.RolePserver), builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Priority(1), builders.CreatedAfter(6)))
	s.onPod(builders.Pod("c-master", builders.MemberOf("c", v1.RoleMaster), builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Priority(1), builders.CreatedAfter(7)))

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
		{Name: "high-old", Phase: corev1.PodPending, Unschedulable: true, Created: builders.T0.Add(1), Request: snapshot.Resources{CPUMilli: 8000, MemoryMega: 1024}, Priority: 1000},
		{Name: "a-old", Node: "n1", Phase: corev1.PodPending, Created: builders.T0.Add(3), Request: snapshot.Resources{CPUMilli: 1000, MemoryMega: 1024}},
		// 1500Ki rounds up to 2 MiB so that a planner never under-reserves.
		{Name: "a-new", Node: "n1", Phase: corev1.PodRunning, Created: builders.T0.Add(5), Request: snapshot.Resources{CPUMilli: 1000, MemoryMega: 2}},
	}, r.Trainers["ns/a"])
	assert.True(t, r.Trainers["ns/a"][2].Running())
	assert.Equal(t, r.Trainers["ns/a"], r.TrainerPods("ns/a"))
}

func TestTrainersStayOrderedAcrossEvents(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "64", "64Gi"))
	// Created out of order, some in the same second.
	for _, p := range []struct {
		name string
		at   time.Duration
	}{{"e", 5}, {"b", 1}, {"d", 3}, {"a", 1}, {"c", 3}} {
		s.onPod(builders.Pod(p.name, builders.TrainerOf("job"), builders.Phase(corev1.PodPending), builders.CreatedAfter(p.at*time.Second)))
	}
	s.onPod(builders.Pod("c", builders.TrainerOf("job"), builders.OnNode("n1"), builders.CreatedAfter(3*time.Second), builders.PodRV("2")))
	s.onPodDelete(builders.Pod("d", builders.TrainerOf("job")))
	s.onPod(builders.Pod("b", builders.TrainerOf("job"), builders.OnNode("n1"), builders.Terminating(), builders.CreatedAfter(time.Second), builders.PodRV("2")))

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
	s.onNode(builders.Node("n1", "64", "64Gi"))
	s.onPod(builders.Pod("t1", builders.TrainerOf("job"), builders.OnNode("n1"), builders.Requests("1", "1Gi"), builders.PodRV("1")))
	s.onPod(builders.Pod("web", builders.OnNode("n1"), builders.Requests("2", "1Gi"), builders.PodRV("1")))
	assert.Empty(t, s.InquiryResource().Nodes[0].Terminating)

	s.onPod(builders.Pod("t1", builders.TrainerOf("job"), builders.OnNode("n1"), builders.Requests("1", "1Gi"), builders.Terminating(), builders.PodRV("2")))
	s.onPod(builders.Pod("web", builders.OnNode("n1"), builders.Requests("2", "1Gi"), builders.Terminating(), builders.PodRV("2")))
	r := s.InquiryResource()
	assert.ElementsMatch(t, []snapshot.TerminatingPod{
		{Request: snapshot.Resources{CPUMilli: 1000, MemoryMega: 1024}, Deadline: builders.T0, Trainer: true},
		{Request: snapshot.Resources{CPUMilli: 2000, MemoryMega: 1024}, Deadline: builders.T0},
	}, r.Nodes[0].Terminating)
	assert.Equal(t, int64(64000-3000), r.Nodes[0].Free.CPUMilli, "they still hold their node")
	assert.Empty(t, r.Trainers["ns/job"], "but it is no trainer of the job any more")

	s.onPodDelete(builders.Pod("t1", builders.TrainerOf("job")))
	s.onPodDelete(builders.Pod("web"))
	assert.Empty(t, s.InquiryResource().Nodes[0].Terminating)
}

// TestOnlyTheJobsReplicaSetsPodsAreItsPods: a pod that carries a job's
// label but that the job's ReplicaSet does not control is an ordinary pod: it
// is no trainer and makes no claim for the job.
func TestOnlyTheJobsReplicaSetsPodsAreItsPods(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "8", "8Gi"))
	s.onPod(builders.Pod("t", builders.TrainerOf("job"), builders.OnNode("n1"), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("stray", builders.Label(v1.LabelTrainer, "job"), builders.OnNode("n1"), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("stray-pending", builders.Label(v1.LabelPserver, "job"), builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("wrong-role", builders.MemberOf("job", v1.RolePserver), builders.Label(v1.LabelPserver, ""), builders.Label(v1.LabelTrainer, "job"),
		builders.OnNode("n1")))
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
	p := builders.Pod("gpu", builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."), builders.Requests("1", "1Gi"))
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

func TestUnplacedJobPodsAreReported(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "8", "8Gi"))
	gatedPod := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1.SchedulingGateAdmission}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonSchedulingGated}}
	}
	untried := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	s.onPod(builders.Pod("gated-pserver", builders.MemberOf("q", v1.RolePserver), gatedPod, builders.CreatedAfter(2), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("gated-trainer", builders.TrainerOf("q"), gatedPod, builders.CreatedAfter(1), builders.Requests("2", "1Gi")))
	s.onPod(builders.Pod("untried-master", builders.MemberOf("r", v1.RoleMaster), untried, builders.CreatedAfter(3)))
	s.onPod(builders.Pod("unschedulable", builders.MemberOf("r", v1.RolePserver), builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu.")))
	s.onPod(builders.Pod("bound", builders.TrainerOf("r"), builders.OnNode("n1")))
	s.onPod(builders.Pod("going", builders.MemberOf("r", v1.RolePserver), untried, builders.Terminating()))
	s.onPod(builders.Pod("not-a-job-pod", untried))

	r := s.InquiryResource()
	var names []string
	for _, p := range r.Unplaced {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"gated-trainer", "gated-pserver", "untried-master"}, names, "oldest first")
	assert.Equal(t, "ns/q", r.Unplaced[0].Job)
	assert.True(t, r.Unplaced[0].Trainer)
	assert.Equal(t, snapshot.Resources{CPUMilli: 2000, MemoryMega: 1024}, r.Unplaced[0].Request)
	// A pod of no job the scheduler has not tried waits with the
	// unschedulable ones, marked untried.
	pending := map[string]bool{}
	for _, p := range r.Pending {
		pending[p.Name] = p.Untried
	}
	assert.Equal(t, map[string]bool{"unschedulable": false, "not-a-job-pod": true}, pending)
	assert.Equal(t, int64(8000), r.Idle().CPUMilli, "unplaced pods are no load")

	// Bound, it leaves the list.
	s.onPod(builders.Pod("untried-master", builders.MemberOf("r", v1.RoleMaster), builders.OnNode("n1"), builders.PodRV("2"), builders.CreatedAfter(3)))
	assert.Len(t, s.InquiryResource().Unplaced, 2)
}
