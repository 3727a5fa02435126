package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjlisters "github.com/paddlepaddle/edl/pkg/generated/listers/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
)

func TestVariant(t *testing.T) {
	for _, label := range []string{"edl", "no-edl", "edl+load=0.85", "edl+binpack", "no-edl+load=0.9+binpack", "edl+nogang", "edl+noteams", "quota", "quota+binpack"} {
		v, err := ParseVariant(label)
		require.NoError(t, err, label)
		assert.Equal(t, label, v.Label())
	}
	v, err := ParseVariant("edl+load=0.85+binpack")
	require.NoError(t, err)
	assert.Equal(t, Variant{Mode: On, MaxLoadDesired: 0.85, BinPack: true}, v)
	v, err = ParseVariant("quota")
	require.NoError(t, err)
	assert.Equal(t, Variant{Mode: On, Quota: true}, v, "quota is EDL on under static quotas")
	v, err = ParseVariant("edl+quota")
	require.NoError(t, err)
	assert.Equal(t, "quota", v.Label())
	for _, bad := range []string{"", "on", "edl+load=2", "edl+load=x", "edl+fast", "quotas"} {
		_, err := ParseVariant(bad)
		assert.Error(t, err, bad)
	}
}

func TestSummarize(t *testing.T) {
	s := func(at time.Duration, util float64, pending, web int) Sample {
		return Sample{At: at, Utilization: util, Ideal: 1, PendingJobs: pending, WebPending: web, RunningTrainers: 10}
	}
	r := &Result{
		Scenario: Shared, Variant: Variant{Mode: On}, WindowStart: 10 * time.Second, End: 40 * time.Second,
		Samples: []Sample{s(0, 0.1, 2, 0), s(10*time.Second, 0.8, 0, 3), s(20*time.Second, 0.9, 0, 0), s(40*time.Second, 1, 0, 1)},
		Jobs: []JobTiming{
			{Name: "a", Submitted: 0, FirstTrainer: 2 * time.Second, Running: 4 * time.Second},
			{Name: "b", Submitted: 10 * time.Second, FirstTrainer: -1, Running: -1}, // pending until the end: 30 s
		},
		Web: []PodWait{
			{Name: "before-window", Created: 5 * time.Second, Running: 30 * time.Second, Deleted: -1},
			{Name: "fast", Created: 11 * time.Second, Running: 12 * time.Second, Deleted: -1},
			{Name: "slow", Created: 11 * time.Second, Running: 20 * time.Second, Deleted: -1},
			{Name: "dropped", Created: 11 * time.Second, Running: -1, Deleted: 15 * time.Second},
			{Name: "still-pending", Created: 36 * time.Second, Running: -1, Deleted: -1}, // 4 s at the end
		},
	}
	got := Summarize(r)
	assert.Equal(t, 3, got.Samples)
	assert.InDelta(t, 0.9, got.MeanUtilization, 1e-9)
	assert.InDelta(t, 1, got.MeanIdeal, 1e-9)
	assert.Equal(t, 2, got.Jobs)
	assert.Equal(t, 1, got.NeverRunning)
	assert.Equal(t, 17*time.Second, got.MeanPending, "(4 s + 30 s) / 2")
	assert.Equal(t, 16*time.Second, got.MeanFirstTrainer, "(2 s + 30 s) / 2")
	assert.Equal(t, 3, got.WebPods)
	assert.Equal(t, 1, got.WebDropped)
	assert.Equal(t, 4*time.Second, got.WebP50)
	assert.Equal(t, 9*time.Second, got.WebP95)
	assert.Equal(t, 3, got.WebMostPending)

	// CPU held by jobs not Running: 10 % and 30 % of the cluster in two of
	// the three samples of the window.
	r.Samples[1].CPUHeldWaitingMilli, r.Samples[1].CPUAllocMilli = 1000, 10000
	r.Samples[2].CPUHeldWaitingMilli, r.Samples[2].CPUAllocMilli = 3000, 10000
	r.Samples[3].CPUAllocMilli = 10000
	held := Summarize(r)
	assert.InDelta(t, 0.4/3, held.MeanHeldWaiting, 1e-9)
	assert.InDelta(t, 0.3, held.MostHeldWaiting, 1e-9)
	r.Scenario = Training
	assert.Contains(t, Table(Training, []Summary{Summarize(r)}), "| CPU held by waiting jobs (Running pods of jobs not Running), mean / max | 13.3% / 30.0% |")

	table := Table(Shared, []Summary{got})
	assert.Contains(t, table, "| shared | edl | original, EDL on | original, EDL off |")
	assert.Contains(t, table, "| mean CPU allocation utilization | 90.0% | 83.4%")
	assert.Contains(t, table, "4.0 s / 9.0 s (9.0 s; 3 pods)")
}

// TestSmoke runs the three experiments at the smoke size with EDL on,
// against the built edl binary, and checks what make experiment writes:
// samples, CSVs and a PNG; that EDL started every job and grew them; and in
// Pools that the GPU jobs ran on the GPU pool and EDL's growth was timed.
func TestSmoke(t *testing.T) {
	bin, err := framework.BuildEDL()
	require.NoError(t, err)
	dir := t.TempDir()

	size, err := LookupSize("smoke")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	results := map[Scenario]*Result{}
	scenarios := []Scenario{Training, Shared, Pools}
	for _, scenario := range scenarios {
		var progress bytes.Buffer
		res, err := Run(ctx, Options{Size: size, Scenario: scenario, Variant: Variant{Mode: On}, EDL: bin,
			Dir: filepath.Join(dir, string(scenario)), Progress: &progress})
		t.Logf("%s progress:\n%s", scenario, progress.String())
		require.NoError(t, err)
		results[scenario] = res

		require.NotEmpty(t, res.Samples)
		assert.Greater(t, res.Samples[len(res.Samples)-1].CPUAllocMilli, int64(0), "the samples see the nodes")
		wantJobs := map[Scenario]int{Training: size.Jobs, Shared: size.SharedJobs, Pools: size.Pools.CPUJobs + size.Pools.GPUJobs}[scenario]
		require.Len(t, res.Jobs, wantJobs)
		for _, j := range res.Jobs {
			assert.GreaterOrEqual(t, j.Running, j.Submitted, "with EDL job %s reached phase Running", j.Name)
		}
		grew := false
		for _, s := range res.Samples {
			for _, j := range s.Jobs {
				grew = grew || j.Running > j.Min
			}
		}
		assert.True(t, grew, "with EDL some job ran more than its minimum of trainers")
		assert.Positive(t, res.Scalings, "edl logged its scalings")
		assert.Equal(t, len(res.Steps), strings.Count(progress.String(), " t="), "one progress line per step")

		paths, err := WriteCSV(filepath.Join(dir, "out"), res)
		require.NoError(t, err)
		samples := readCSV(t, paths[0])
		assert.Equal(t, "t_s", samples[0][0])
		assert.Len(t, samples, len(res.Samples)+1, "a row per sample")
	}
	assert.Positive(t, Summarize(results[Shared]).WebPods, "web pods were created during the wave and timed")
	wantAdded := 0
	for i := 1; i < len(size.WebSteps); i++ {
		wantAdded += max(0, int(size.WebSteps[i]-size.WebSteps[i-1]))
	}
	assert.Equal(t, wantAdded, results[Shared].WebAdded, "the up-steps' web pods are counted")

	pools := results[Pools]
	assert.Positive(t, Summarize(pools).WebPods, "web pods were created during the wave and timed")
	gpuRan := false
	for _, s := range pools.Samples {
		require.Len(t, s.Pools, 2, "the samples see both pools")
		assert.Equal(t, CPUPool, s.Pools[0].Name)
		assert.Zero(t, s.Pools[0].GPUAlloc)
		assert.Equal(t, int64(size.Pools.GPUNodes)*size.Pools.GPUsPerNode, s.Pools[1].GPUAlloc)
		gpuRan = gpuRan || s.Pools[1].GPURunning > int64(size.Pools.GPUTrainerMin)
	}
	assert.True(t, gpuRan, "the GPU job grew on the GPU pool")
	require.NotEmpty(t, pools.Growth, "the trainers EDL's growth added were timed")
	for _, w := range pools.Growth {
		want := CPUPool
		if strings.HasPrefix(w.Job, "gpu-") {
			want = GPUPool
		}
		assert.Equal(t, want, w.Pool, "trainer %s", w.Pod)
	}
	assert.Positive(t, Summarize(pools).Pools[1].MeanIdeal, "the GPU pool has a bound")

	for _, scenario := range scenarios {
		path, err := PlotScenario(filepath.Join(dir, "out"), scenario, []*Result{results[scenario]})
		require.NoError(t, err)
		f, err := os.Open(path)
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err, "%s is a PNG", path)
		assert.Greater(t, cfg.Height, cfg.Width/2, "the panels are stacked")
	}
}

// TestSmokeTeams runs the teams experiment at the smoke size with its
// TrainingQueues, against the built edl binary, and checks what make
// experiment writes: every team's jobs ran, the samples hold each team's
// use and fair share, the CSVs have a row per sample and the team columns,
// the figure is a PNG and the table has the teams' rows.
func TestSmokeTeams(t *testing.T) {
	bin, err := framework.BuildEDL()
	require.NoError(t, err)
	dir := t.TempDir()
	size, err := LookupSize("smoke")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Size: size, Scenario: Teams, Variant: Variant{Mode: On}, EDL: bin, Dir: filepath.Join(dir, "teams"), Progress: &progress})
	t.Logf("progress:\n%s", progress.String())
	require.NoError(t, err)

	require.Len(t, res.Bursts, len(TeamSpecs), "each team turned busy once")
	assert.Len(t, res.Jobs, len(TeamSpecs)*size.Teams.Burst)
	for _, j := range res.Jobs {
		assert.GreaterOrEqual(t, j.Running, j.Submitted, "job %s reached phase Running", j.Name)
	}
	assert.True(t, res.Bursts[len(res.Bursts)-1].Reclaiming, "the last team turned busy beside the others")
	sawAll := false
	for _, s := range res.Samples {
		require.Len(t, s.Teams, len(TeamSpecs), "the samples see every team")
		all := true
		for _, team := range s.Teams {
			all = all && team.Unmet()
			assert.LessOrEqual(t, team.FairMilli, float64(team.DemandMilli)+1, "a fair share is at most the demand")
		}
		sawAll = sawAll || all
	}
	assert.True(t, sawAll, "every team had unmet demand at some sample")
	sum := Summarize(res)
	assert.Positive(t, sum.Teams.FairSamples)
	assert.NotEmpty(t, sum.Teams.ReclaimJobs)
	assert.Contains(t, Table(Teams, []Summary{sum}), "| team c (weight 1, guarantee 20% of the CPU): mean share / fair share / EDL's deserved share over those samples |")

	out := filepath.Join(dir, "out")
	paths, err := WriteCSV(out, res)
	require.NoError(t, err)
	samples := readCSV(t, paths[0])
	assert.Len(t, samples, len(res.Samples)+1, "a row per sample")
	assert.Contains(t, samples[0], "team_c_fair_milli")
	back, err := ReadResult(out, Teams, res.Variant)
	require.NoError(t, err)
	assert.Equal(t, res.Bursts[0].Jobs, back.Bursts[0].Jobs, "the bursts read back")
	assert.Equal(t, sum.Teams.FairSamples, SummarizeTeams(back).FairSamples, "the samples read back")

	path, err := PlotScenario(out, Teams, []*Result{res})
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	_, err = png.DecodeConfig(f)
	f.Close()
	require.NoError(t, err, "%s is a PNG", path)
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

func TestPoolUsage(t *testing.T) {
	node := func(name, pool, cpu string, gpu int64) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if pool != "" {
			n.Labels[PoolLabel] = pool
		}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if gpu > 0 {
			n.Status.Allocatable[framework.GPUResource] = *resource.NewQuantity(gpu, resource.DecimalSI)
		}
		return n
	}
	pod := func(nodeName string, phase corev1.PodPhase, size PodSize) *corev1.Pod {
		return &corev1.Pod{
			Spec:   corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: size.resources()}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	nodes := []*corev1.Node{node("cpu-0", CPUPool, "18", 0), node("cpu-1", CPUPool, "18", 0), node("gpu-0", GPUPool, "64", 8), node("other", "", "4", 0)}
	pods := []*corev1.Pod{
		pod("cpu-0", corev1.PodRunning, TrainerSize),
		pod("cpu-1", corev1.PodRunning, WebSize),
		pod("cpu-1", corev1.PodPending, TrainerSize), // bound, not yet Running: not counted
		pod("gpu-0", corev1.PodRunning, GPUTrainerSize),
		pod("gpu-0", corev1.PodRunning, GPUTrainerSize),
		pod("gpu-0", corev1.PodRunning, PserverSize),
		pod("other", corev1.PodRunning, TrainerSize), // a node of no pool
		pod("", corev1.PodPending, GPUTrainerSize),   // unbound
	}
	got := poolUsage(nodes, pods, webCounts{held: map[string]int{"cpu-1": 2}, fixed: map[string]int{"cpu-1": 1}}, nil, PoolLabel)
	require.Len(t, got, 2)
	// The room for trainers: the pods here have no trainer label, so all
	// of them hold room, the Pending one bound to cpu-1 too.
	assert.Equal(t, []Room{{Free: NodeShape{CPUMilli: 10000, MemMiB: -10 << 10}, Nodes: 1}, {Free: NodeShape{CPUMilli: 13000, MemMiB: -8 << 10}, Nodes: 1}},
		got[0].TrainerRooms)
	assert.Equal(t, int64(5000+3000+5000), got[0].HeldMilli)
	assert.Equal(t, int64(16000), got[1].HeldMilli)
	for i := range got {
		got[i].TrainerRooms, got[i].HeldMilli = nil, 0
	}
	assert.Equal(t, PoolSample{Name: CPUPool, Nodes: 2, CPUAllocMilli: 36000, CPURunningMilli: 8000, WebHeld: []int{1, 0, 1},
		WebFixedHeld: []int{1, 1}}, got[0], "one node of the CPU pool holds no web pod, one holds two, one of them placed before any job")
	assert.Equal(t, PoolSample{Name: GPUPool, Nodes: 1, CPUAllocMilli: 64000, CPURunningMilli: 16000, GPUAlloc: 8, GPURunning: 2, WebHeld: []int{1}, WebFixedHeld: []int{1}}, got[1])
	assert.Equal(t, CPU, got[0].Resource())
	assert.InDelta(t, 8.0/36, got[0].Utilization(), 1e-9)
	assert.Equal(t, GPU, got[1].Resource())
	assert.InDelta(t, 0.25, got[1].Utilization(), 1e-9, "a GPU pool counts GPUs, not its CPU")
	assert.Empty(t, poolUsage(nodes[3:], pods, webCounts{}, nil, PoolLabel), "no pool without the label")
}

func TestGrowth(t *testing.T) {
	s := time.Second
	g := newGrowth()
	g.scaled("a", 2) // the job's start owes nothing
	g.pod("a1", "a-trainer-1", "a", "", false, false, 0)
	g.pod("a2", "a-trainer-2", "a", "", true, false, 0)
	g.scaled("a", 4) // growth: the next two pods are growth's
	g.pod("a3", "a-trainer-3", "a", "", false, false, 1*s)
	g.pod("a4", "a-trainer-4", "a", "", true, false, 1*s) // bound at once
	g.pod("a3", "a-trainer-3", "a", "", false, false, 2*s)
	g.pod("a3", "a-trainer-3", "a", "", true, false, 4*s)
	g.pod("a3", "a-trainer-3", "a", "", true, true, 9*s) // later deleted: the wait stays 3 s
	// A preempted trainer is re-created: not growth.
	g.pod("a5", "a-trainer-5", "a", "", false, false, 5*s)
	// A rise cancelled by a fall before its pods appear owes nothing.
	g.scaled("a", 6)
	g.scaled("a", 5)
	g.scaled("a", 4)
	g.pod("a6", "a-trainer-6", "a", "", false, false, 6*s)
	// A GPU job's growth pod deleted before it was bound, another still
	// waiting.
	g.scaled("b", 1)
	g.scaled("b", 3)
	g.pod("b1", "b-trainer-1", "b", GPUPool, false, false, 2*s)
	g.pod("b1", "b-trainer-1", "b", GPUPool, false, true, 7*s)
	g.pod("b2", "b-trainer-2", "b", GPUPool, false, false, 8*s)

	got := g.list()
	want := []TrainerWait{
		{Pod: "a-trainer-3", Job: "a", Pool: CPUPool, Created: 1 * s, Bound: 4 * s, Deleted: -1},
		{Pod: "a-trainer-4", Job: "a", Pool: CPUPool, Created: 1 * s, Bound: 1 * s, Deleted: -1},
		{Pod: "b-trainer-1", Job: "b", Pool: GPUPool, Created: 2 * s, Bound: -1, Deleted: 7 * s},
		{Pod: "b-trainer-2", Job: "b", Pool: GPUPool, Created: 8 * s, Bound: -1, Deleted: -1},
	}
	assert.Equal(t, want, got)
	end := 10 * s
	var waits []time.Duration
	for _, w := range got {
		waits = append(waits, w.Wait(end))
	}
	assert.Equal(t, []time.Duration{3 * s, 0, 5 * s, 2 * s}, waits)
}

func TestSummarizePools(t *testing.T) {
	s := time.Second
	sample := func(at time.Duration, cpuUsed int64, gpuUsed int64, cpuIdeal, gpuIdeal float64) Sample {
		return Sample{At: at, Pools: []PoolSample{
			{Name: CPUPool, Nodes: 2, CPUAllocMilli: 36000, CPURunningMilli: cpuUsed, Ideal: cpuIdeal, IdealAround: cpuIdeal / 2,
				IdealTrainers: cpuIdeal / 4},
			{Name: GPUPool, Nodes: 1, CPUAllocMilli: 64000, CPURunningMilli: 1000, GPUAlloc: 8, GPURunning: gpuUsed, Ideal: gpuIdeal},
		}}
	}
	r := &Result{
		Scenario: Pools, Variant: Variant{Mode: On}, Size: Size{Interval: 2 * s}, WindowStart: 10 * s, End: 30 * s,
		Samples: []Sample{sample(0, 0, 0, 0, 0), sample(10*s, 18000, 4, 0.9, 1), sample(20*s, 36000, 8, 1, 1)},
		Growth: []TrainerWait{
			{Pod: "t1", Pool: CPUPool, Created: 1 * s, Bound: 2 * s, Deleted: -1},
			{Pod: "t2", Pool: CPUPool, Created: 1 * s, Bound: 6 * s, Deleted: -1}, // late
			{Pod: "t3", Pool: GPUPool, Created: 25 * s, Bound: -1, Deleted: -1},   // waits until the end: 5 s, late
		},
	}
	got := Summarize(r)
	require.Len(t, got.Pools, 2)
	cpu, gpu := got.Pools[0], got.Pools[1]
	assert.Equal(t, CPU, cpu.Resource)
	assert.InDelta(t, 0.75, cpu.MeanUtilization, 1e-9, "(50% + 100%) / 2, the sample before the window left out")
	assert.InDelta(t, 0.95, cpu.MeanIdeal, 1e-9)
	assert.InDelta(t, 0.475, cpu.MeanIdealAround, 1e-9)
	assert.InDelta(t, 0.2375, cpu.MeanIdealTrainers, 1e-9)
	assert.Equal(t, GPU, gpu.Resource)
	assert.InDelta(t, 0.75, gpu.MeanUtilization, 1e-9, "(4 + 8) / 2 of 8 GPUs")
	assert.Equal(t, GrowthSummary{Trainers: 2, Late: 1, Pending: 6 * s, Longest: 5 * s}, cpu.Growth)
	assert.Equal(t, GrowthSummary{Trainers: 1, Late: 1, Pending: 5 * s, Longest: 5 * s}, gpu.Growth)
	assert.Equal(t, GrowthSummary{Trainers: 3, Late: 2, Pending: 11 * s, Longest: 5 * s}, got.Growth)

	table := Table(Pools, []Summary{got})
	assert.Contains(t, table, "| pools | edl |\n|---|---|\n", "no original's columns")
	assert.Contains(t, table, "| cpu pool: mean CPU allocation utilization | 75.0% |")
	assert.Contains(t, table, "| gpu pool: mean GPU allocation utilization | 75.0% |")
	assert.Contains(t, table, "| cpu pool: "+aroundRow+" | 47.5% |")
	assert.Contains(t, table, "| cpu pool: "+trainersRow+" | 23.8% |")
	assert.NotContains(t, table, "gpu pool: "+aroundRow, "a GPU pool has no web pods to hold")
	assert.Contains(t, table, "| their Pending-seconds (waiting for a node), total | cpu 6.0 s, gpu 5.0 s |")

	// The pools' columns go to the samples CSV and come back.
	dir := t.TempDir()
	paths, err := WriteCSV(dir, r)
	require.NoError(t, err)
	assert.Contains(t, paths, filepath.Join(dir, "pools-edl-growth.csv"))
	back, err := ReadResult(dir, Pools, r.Variant)
	require.NoError(t, err)
	require.Len(t, back.Samples, 3)
	assert.Equal(t, r.Samples[2].Pools, back.Samples[2].Pools)
}

// TestSampleWebHeld: a sample counts the nodes by the web pods bound to
// them, leaving out the web pods not bound and those being deleted, overall
// and per pool.
func TestSampleWebHeld(t *testing.T) {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, name := range []string{"a", "b", "c"} {
		require.NoError(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{PoolLabel: CPUPool}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("18")}}}))
	}
	web := func(name, node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{WebLabel: WebName}},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: WebSize.resources()}}},
			Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	for _, p := range []*corev1.Pod{
		web("w1", "a", corev1.PodRunning, false),
		web("w2", "a", corev1.PodPending, false), // bound, starting: held
		web("w3", "b", corev1.PodRunning, false),
		web("w4", "b", corev1.PodRunning, true), // being deleted
		web("w5", "", corev1.PodPending, false), // not bound
	} {
		require.NoError(t, pods.Add(p))
	}
	r := &Recorder{origin: time.Now(), submitted: map[string]time.Duration{}, webDesired: 5,
		nodes: corelisters.NewNodeLister(nodes), pods: corelisters.NewPodLister(pods), jobs: tjlisters.NewTrainingJobLister(jobs)}
	s := r.Sample(time.Now())
	assert.Equal(t, []int{1, 1, 1}, s.WebHeld, "c holds none, b one, a two")
	require.Len(t, s.Pools, 1)
	assert.Equal(t, []int{1, 1, 1}, s.Pools[0].WebHeld)
	assert.Equal(t, 2, unbound(5, s.WebHeld), "of 5 wanted, 3 are bound")
	assert.Equal(t, 0, unbound(2, s.WebHeld), "more bound than wanted (a scale-down)")
}

// TestRecorderCountsStoppedTrainers: a trainer counts as stopped once, when
// it was seen Running and then being deleted or deleted; a trainer deleted
// before it ran, or one that finished, does not count.
func TestRecorderCountsStoppedTrainers(t *testing.T) {
	r := &Recorder{origin: time.Now(), submitted: map[string]time.Duration{}, firstTrainer: map[string]time.Duration{},
		running: map[string]time.Duration{}, web: map[string]*PodWait{}, growth: newGrowth(), trainerUp: map[types.UID]bool{}}
	trainer := func(name string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{v1.LabelTrainer: "job-01"}},
			Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	r.observePod(trainer("a", corev1.PodRunning, false), false)
	r.observePod(trainer("a", corev1.PodRunning, true), false)
	r.observePod(trainer("a", corev1.PodRunning, true), true)
	assert.Equal(t, 1, r.TrainersStopped(), "a Running trainer deleted counts once")

	r.observePod(trainer("b", corev1.PodPending, false), false)
	r.observePod(trainer("b", corev1.PodPending, false), true)
	assert.Equal(t, 1, r.TrainersStopped(), "a trainer deleted before it ran does not count")

	r.observePod(trainer("c", corev1.PodRunning, false), false)
	r.observePod(trainer("c", corev1.PodSucceeded, false), false)
	r.observePod(trainer("c", corev1.PodSucceeded, false), true)
	assert.Equal(t, 1, r.TrainersStopped(), "a trainer that finished does not count")

	r.observePod(trainer("d", corev1.PodRunning, false), false)
	r.observePod(cache.DeletedFinalStateUnknown{Key: "d", Obj: trainer("d", corev1.PodRunning, false)}, true)
	assert.Equal(t, 2, r.TrainersStopped(), "a trainer whose deletion was missed counts")

	assert.Equal(t, "0.67 (2 for 3)", stoppedPerWebPod(Summary{WebAdded: 3, TrainersStoppedForWeb: 2}))
	assert.Equal(t, "—", stoppedPerWebPod(Summary{}), "no up-step")
}

func TestCompressedRates(t *testing.T) {
	kcm, sched := CompressedRates(2.5)
	assert.Equal(t, []string{"--kube-api-qps=50", "--kube-api-burst=75"}, kcm, "kube-controller-manager's 20/30, 2.5 times")
	assert.Equal(t, []string{"--kube-api-qps=125", "--kube-api-burst=250"}, sched, "kube-scheduler's 50/100, 2.5 times")
	kcm, _ = CompressedRates(1)
	assert.Equal(t, []string{"--kube-api-qps=20", "--kube-api-burst=30"}, kcm, "uncompressed, the defaults")
}
