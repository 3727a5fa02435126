package experiment

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjlisters "github.com/paddlepaddle/edl/pkg/generated/listers/paddlepaddle/v1"
)

// boundsSize is a Shared size of three 18-CPU nodes, for the bounds of a
// hand-made sample.
var boundsSize = Size{Name: "bounds", Nodes: 3, NodeCPU: "18", NodeMemory: "100Gi", NodePods: 110, Interval: time.Second,
	Pservers: 1, SharedJobs: 1, SharedTrainerMin: 1, SharedTrainerMax: 6}

// cluster is a recorder over the given nodes, pods and jobs, with the web
// service's desired count.
func cluster(t *testing.T, webDesired int, nodes []string, pods []*corev1.Pod, jobs ...*v1.TrainingJob) *Recorder {
	t.Helper()
	nodeIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	jobIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, name := range nodes {
		require.NoError(t, nodeIdx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("18"),
				corev1.ResourceMemory: resource.MustParse("100Gi"), corev1.ResourcePods: resource.MustParse("110")}}}))
	}
	for _, p := range pods {
		require.NoError(t, podIdx.Add(p))
	}
	for _, j := range jobs {
		require.NoError(t, jobIdx.Add(j))
	}
	return &Recorder{origin: time.Now(), submitted: map[string]time.Duration{}, webDesired: webDesired,
		nodes: corelisters.NewNodeLister(nodeIdx), pods: corelisters.NewPodLister(podIdx), jobs: tjlisters.NewTrainingJobLister(jobIdx)}
}

// boundPod is a pod named name bound to node, Running unless phase says
// otherwise; deleting marks it being deleted.
func boundPod(name, node string, labels map[string]string, size PodSize, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: size.resources()}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

func TestCapWeb(t *testing.T) {
	for _, tc := range []struct {
		name          string
		web           map[string]int
		desired       int
		want, dropped map[string]int
	}{
		{"nothing above the desired count", map[string]int{"a": 2, "b": 1}, 3, map[string]int{"a": 2, "b": 1}, map[string]int{}},
		{"the most loaded node first", map[string]int{"a": 3, "b": 1}, 2, map[string]int{"a": 1, "b": 1}, map[string]int{"a": 2}},
		{"ties by name", map[string]int{"a": 2, "b": 2}, 3, map[string]int{"a": 1, "b": 2}, map[string]int{"a": 1}},
		{"none wanted", map[string]int{"a": 1, "b": 2}, 0, map[string]int{"a": 0, "b": 0}, map[string]int{"a": 1, "b": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dropped := capWeb(tc.web, tc.desired)
			assert.Equal(t, tc.want, tc.web)
			assert.Equal(t, tc.dropped, dropped)
		})
	}
}

// TestBoundsAtADownStep: at the sample of a down-step, the web pods above
// the new desired count still run; the bounds hold only the desired ones,
// so none is above the ideal, which places the desired count.
func TestBoundsAtADownStep(t *testing.T) {
	web := map[string]string{WebLabel: WebName}
	trainer := map[string]string{v1.LabelTrainer: "job-01"}
	pserver := map[string]string{v1.LabelPserver: "job-01"}
	var pods []*corev1.Pod
	for i, node := range []string{"a", "a", "a", "a", "b", "b", "b", "b", "c", "c", "c", "c"} {
		pods = append(pods, boundPod("web-"+string(rune('0'+i)), node, web, WebSize, false))
	}
	pods = append(pods, boundPod("t1", "a", trainer, TrainerSize, false), boundPod("t2", "b", trainer, TrainerSize, false),
		boundPod("ps", "c", pserver, PserverSize, false))
	r := cluster(t, 3, []string{"a", "b", "c"}, pods) // 12 web pods run, 3 wanted
	r.submitted["job-01"] = 0
	s := r.Sample(time.Now())
	assert.Equal(t, []int{0, 3}, s.WebHeld, "one web pod held on each node")
	d := &driver{opts: Options{Size: boundsSize, Scenario: Shared, Variant: Variant{Mode: On}}}
	require.NoError(t, d.bound(&s))
	// The ideal: 3 web pods (9 CPU), 1 pserver (4) and 6 trainers (30) fit
	// into the 54 CPU: 43 of them.
	assert.InDelta(t, 43.0/54, s.Ideal, 1e-3)
	assert.LessOrEqual(t, s.IdealAround, s.Ideal)
	assert.LessOrEqual(t, s.IdealTrainers, s.Ideal)
	assert.Greater(t, s.Utilization, s.Ideal, "the 12 web pods not yet deleted still run")

	// Without the cap the held web pods alone would be 36 CPU and the
	// trainers' bound above the ideal.
	rooms, held := trainerRooms(r.mustNodes(t), pods, nil)
	uncapped, _, err := IdealIn(CPU, rooms, held, s.CPUAllocMilli, trainerDemand(TrainerSize, 1, 1, 6, 0, On))
	require.NoError(t, err)
	assert.Greater(t, float64(uncapped)/float64(s.CPUAllocMilli), s.Ideal, "the bound the cap prevents")
}

// mustNodes lists the recorder's nodes.
func (r *Recorder) mustNodes(t *testing.T) []*corev1.Node {
	t.Helper()
	nodes, err := r.nodes.List(labels.Everything())
	require.NoError(t, err)
	return nodes
}

// TestSampleTerminatingPods: a Running pod being deleted counts neither in
// the utilization nor in what the waiting jobs hold nor in the rooms of the
// bounds; its CPU is apart.
func TestSampleTerminatingPods(t *testing.T) {
	trainer := map[string]string{v1.LabelTrainer: "job-01"}
	waitingTrainer := map[string]string{v1.LabelTrainer: "job-02"}
	waitingPserver := map[string]string{v1.LabelPserver: "job-02"}
	waitingMaster := map[string]string{v1.LabelMaster: "job-02"}
	pods := []*corev1.Pod{
		boundPod("t1", "a", trainer, TrainerSize, false),
		boundPod("t2", "a", trainer, TrainerSize, true), // being deleted
		boundPod("w-t", "b", waitingTrainer, TrainerSize, false),
		boundPod("w-ps", "b", waitingPserver, PserverSize, false),
		boundPod("w-ps2", "b", waitingPserver, PserverSize, true), // being deleted
		boundPod("w-m", "c", waitingMaster, PodSize{CPU: "1", Memory: "1Gi"}, false),
	}
	running := &v1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "job-01", Namespace: "ns"}, Status: v1.TrainingJobStatus{Phase: v1.PhaseRunning}}
	waiting := &v1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "job-02", Namespace: "ns"}, Status: v1.TrainingJobStatus{Phase: v1.PhaseCreating}}
	s := cluster(t, 0, []string{"a", "b", "c"}, pods, running, waiting).Sample(time.Now())
	assert.Equal(t, int64(5000+5000+4000+1000), s.CPURunningMilli)
	assert.Equal(t, int64(5000+4000), s.CPUDeletingMilli)
	assert.InDelta(t, 15.0/54, s.Utilization, 1e-9)
	assert.Equal(t, int64(10000), s.CPUHeldWaitingMilli)
	assert.Equal(t, RoleMilli{Master: 1000, Pserver: 4000, Trainer: 5000}, s.HeldWaiting)
	assert.InDelta(t, 5.0/54, s.Useful(), 1e-9, "the running job's trainer alone is useful")
	assert.Equal(t, int64(4000+1000), s.HeldMilli, "the rooms leave out the pserver being deleted")
}

// TestBoundFailsOnAnLPError: a packing program the solver fails on is an
// error of the bound and of the sampling, which stops the run, not a bound
// of 0.
func TestBoundFailsOnAnLPError(t *testing.T) {
	solve := simplex
	t.Cleanup(func() { simplex = solve })
	simplex = func([]float64, mat.Matrix, []float64, float64, []int) (float64, []float64, error) {
		return 0, nil, errors.New("singular basis")
	}
	_, _, err := IdealIn(CPU, []Room{{Free: boundsSize.node(), Nodes: 3}}, 0, 54000, []PodDemand{TrainerSize.demand("trainer", 0, 6)})
	require.ErrorContains(t, err, "singular basis")

	r := cluster(t, 0, []string{"a", "b", "c"}, []*corev1.Pod{boundPod("t1", "a", map[string]string{v1.LabelTrainer: "job-01"}, TrainerSize, false)})
	r.submitted["job-01"] = 0
	stopped := false
	d := &driver{rec: r, opts: Options{Size: boundsSize, Scenario: Training, Variant: Variant{Mode: On}}, stop: func() { stopped = true }}
	s := r.Sample(time.Now())
	require.ErrorContains(t, d.bound(&s), "singular basis")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.sample(ctx) // returns at the first sample
	require.ErrorContains(t, d.boundErr, "singular basis")
	assert.True(t, stopped, "the run is stopped")
	assert.Len(t, d.samples, 1)
}

// TestBoundOfWhatEDLCannotInfluence: the web pods seen before the first job
// was submitted are held where they run, the later ones packed anew; the
// bound is between the bound with every web pod held and the ideal.
func TestBoundOfWhatEDLCannotInfluence(t *testing.T) {
	web := map[string]string{WebLabel: WebName}
	trainer := map[string]string{v1.LabelTrainer: "job-01"}
	var pods []*corev1.Pod
	// Before the job: two web pods on a and b each. After: four on c,
	// where kube-scheduler put them beside the trainers.
	for i, node := range []string{"a", "a", "b", "b", "c", "c", "c", "c"} {
		p := boundPod(fmt.Sprintf("web-%d", i), node, web, WebSize, false)
		p.UID = types.UID(p.Name)
		pods = append(pods, p)
	}
	pods = append(pods, boundPod("t1", "a", trainer, TrainerSize, false), boundPod("t2", "c", trainer, TrainerSize, false))
	r := cluster(t, 8, []string{"a", "b", "c"}, pods)
	r.web = map[string]*PodWait{}
	for i, p := range pods[:8] {
		created := time.Second
		if i >= 4 {
			created = 3 * time.Second
		}
		r.web[string(p.UID)] = &PodWait{Name: p.Name, Created: created}
	}
	r.submitted["job-01"] = 2 * time.Second
	s := r.Sample(time.Now())
	assert.Equal(t, []int{1, 0, 2}, s.WebFixedHeld, "a and b hold two web pods placed before the job, c none")
	assert.Equal(t, []int{0, 0, 2, 0, 1}, s.WebHeld)

	d := &driver{opts: Options{Size: boundsSize, Scenario: Shared, Variant: Variant{Mode: On}}}
	require.NoError(t, d.bound(&s))
	assert.Less(t, s.IdealAround, s.IdealFixed, "c's four web pods, EDL's to influence, may go elsewhere")
	assert.LessOrEqual(t, s.IdealFixed, s.Ideal)

	delete(r.submitted, "job-01")
	assert.Equal(t, []int{3}, r.Sample(time.Now()).WebFixedHeld, "no job submitted: nothing is fixed yet")
}

// TestLevels: the window's samples by web level, the levels reached by an
// up-step marked.
func TestLevels(t *testing.T) {
	sample := func(at time.Duration, web int, util float64) Sample {
		return Sample{At: at, WebDesired: web, Utilization: util, Ideal: 1, IdealFixed: 0.9, IdealAround: 0.8, IdealTrainers: 0.7}
	}
	s := time.Second
	r := &Result{Scenario: Shared, Variant: Variant{Mode: On}, WindowStart: 2 * s, Samples: []Sample{
		sample(0, 4, 0.1), sample(2*s, 4, 0.5), sample(4*s, 4, 0.7), sample(6*s, 2, 0.9), sample(8*s, 4, 0.6),
	}}
	levels := Levels(r)
	require.Len(t, levels, 3)
	assert.Equal(t, Level{Web: 4, Samples: 2, Utilization: 0.6, Ideal: 1, Fixed: 0.9, Around: 0.8, Trainers: 0.7}, levels[0],
		"the sample before the window left out")
	assert.False(t, levels[1].Up)
	assert.True(t, levels[2].Up)
	table := LevelTable(r)
	assert.Contains(t, table, "| shared, edl, by level | 1: 4 web pods | 2: 2 web pods | 3: 4 web pods |\n|---|---|---|---|\n")
	assert.Contains(t, table, "| mean utilization | 60.0% | 90.0% | 60.0% |")
	assert.Contains(t, table, "| "+LevelFixedRow+" | 90.0% | 90.0% | 90.0% |")
}

// TestFixedWebPodsAreHeldOnes: at a down-step the web pods placed before
// the first job are counted only among those held, node by node.
func TestFixedWebPodsAreHeldOnes(t *testing.T) {
	web := map[string]string{WebLabel: WebName}
	var pods []*corev1.Pod
	for i, node := range []string{"a", "a", "a", "b"} {
		p := boundPod(fmt.Sprintf("web-%d", i), node, web, WebSize, false)
		p.UID = types.UID(p.Name)
		pods = append(pods, p)
	}
	r := cluster(t, 2, []string{"a", "b"}, pods)
	r.web = map[string]*PodWait{"web-0": {Created: 0}, "web-1": {Created: 0}, "web-2": {Created: 0}, "web-3": {Created: 3 * time.Second}}
	r.submitted["job-01"] = time.Second
	s := r.Sample(time.Now())
	assert.Equal(t, []int{0, 2}, s.WebHeld, "two wanted: a keeps one of its three")
	assert.Equal(t, []int{1, 1}, s.WebFixedHeld, "a's one held web pod was placed before the job, b's was not")
}
