package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/config"
)

func sampleReport() autoscaler.Report {
	return autoscaler.Report{
		Options: planner.Options{MaxLoadDesired: 0.97},
		Cluster: autoscaler.ClusterLine{Nodes: 4, Pending: 1,
			Allocatable: planner.Resources{CPUMilli: 64000, MemoryMega: 262144},
			Requested:   planner.Resources{CPUMilli: 61000, MemoryMega: 90000},
			Load:        map[string]float64{"CPU": 0.953125, "memory": 0.3433}},
		Jobs: []autoscaler.JobReport{
			{Namespace: "ns", Name: "alpha", Phase: "Running", Running: 11, Explanation: planner.Explanation{
				Job: "ns/alpha", Limit: planner.LimitLoad, From: 11, To: 11, Min: 2, Max: 20, Placed: 11, Fulfillment: 0.5,
				Message: "one more trainer (4 CPU) would take CPU requests past max_load_desired 0.97: 61 CPU of 64 CPU requested (load 0.953)"}},
			{Namespace: "ns", Name: "beta", Phase: "Running", Running: 3, Explanation: planner.Explanation{
				Job: "ns/beta", Limit: planner.LimitCoolDown, From: 3, To: 3, Min: 1, Max: 10, Placed: 3, Fulfillment: 0.222,
				CoolDownLeft: 7 * time.Second, Message: "scaled down at …"}},
			{Namespace: "ns", Name: "gamma", Phase: "Running", Running: 1, Next: &planner.ScaleAction{Job: "ns/gamma", From: 1, To: 3,
				Cause: planner.CauseIdle, Reason: "scale up by 2: …"}, Explanation: planner.Explanation{
				Job: "ns/gamma", Limit: planner.LimitAtMax, From: 1, To: 3, Min: 1, Max: 3, Placed: 3, Fulfillment: 1,
				Message: "grows by 2 to its maximum, 3 of 1..3 trainers"}},
			{Namespace: "other", Name: "new", Phase: "Pending", Explanation: planner.Explanation{
				Job: "other/new", Limit: planner.LimitNotRunning, Min: 2, Max: 4,
				Message: "the job is Pending, and only Running jobs are scaled (0 of 2..4 trainers)"}},
		},
	}
}

func TestExplainPrintsABlockPerJobAndTheCluster(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Print(&out, Result{Report: sampleReport(), Configuration: config.Default(), Source: "the defaults"}, "table", ""))
	text := out.String()
	for _, want := range []string{
		"ns/alpha (Running, priority 0)\n",
		"  trainers     11 asked for (11 running), min 2, max 20\n",
		"  fulfillment  0.5 (11 placed after the next cycle)\n",
		"  next cycle   nothing\n",
		"  limited by   Load: one more trainer (4 CPU) would take CPU requests past max_load_desired 0.97: 61 CPU of 64 CPU requested (load 0.953)\n",
		"  limited by   CoolDown (2 cycles, 7s left): scaled down at …\n",
		"  next cycle   1 -> 3 (idle): scale up by 2: …\n",
		"  limited by   AtMax: grows by 2 to its maximum, 3 of 1..3 trainers\n",
		"other/new (Pending, priority 0)\n",
		"  limited by   NotRunning: the job is Pending",
		"cluster: 4 nodes; allocatable 64 CPU, 262144 MiB memory, 0 GPU; requested 61 CPU, 90000 MiB memory, 0 GPU; load CPU 0.953, memory 0.343 (max_load_desired 0.97); 1 pods wait for a node\n",
		"options: gpuResources=nvidia.com/gpu autoscaler.interval=5s autoscaler.maxLoadDesired=0.97 autoscaler.cooldownCycles=3 autoscaler.maxGrowPerCycle=0 autoscaler.rebalanceGap=0.1 autoscaler.maxMovesPerSecond=10 autoscaler.policy=goodput autoscaler.priceResizes=true autoscaler.dryRun=false autoscaler.gangAdmission=true autoscaler.preemption=true autoscaler.startDeadline=10m0s autoscaler.startRetries=3 (from the defaults)\n",
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "  fulfillment  0 ", "a job that is not running has no fulfillment line")
}

func TestExplainPrintsJSON(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Print(&out, Result{Report: sampleReport(), Configuration: config.Default(), Source: "the defaults"}, "json", ""))
	var back struct {
		Jobs []struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Limit     string `json:"limit"`
			Message   string `json:"message"`
			Next      *struct {
				To int `json:"to"`
			} `json:"next"`
		} `json:"jobs"`
		Cluster struct {
			Nodes int                `json:"nodes"`
			Load  map[string]float64 `json:"load"`
		} `json:"cluster"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	require.Len(t, back.Jobs, 4)
	assert.Equal(t, "Load", back.Jobs[0].Limit)
	assert.Nil(t, back.Jobs[0].Next)
	require.NotNil(t, back.Jobs[2].Next)
	assert.Equal(t, 3, back.Jobs[2].Next.To)
	assert.Equal(t, 4, back.Cluster.Nodes)
	assert.InDelta(t, 0.953, back.Cluster.Load["CPU"], 0.001)
}

func TestFilterReport(t *testing.T) {
	r, err := Filter(sampleReport(), "other", "")
	require.NoError(t, err)
	require.Len(t, r.Jobs, 1)
	assert.Equal(t, "new", r.Jobs[0].Name)

	r, err = Filter(sampleReport(), "ns", "beta")
	require.NoError(t, err)
	require.Len(t, r.Jobs, 1)
	assert.Equal(t, "beta", r.Jobs[0].Name)

	_, err = Filter(sampleReport(), "ns", "nope")
	var notFound *JobNotFoundError
	require.ErrorAs(t, err, &notFound)
	assert.EqualError(t, err, "TrainingJob ns/nope not found")

	r, err = Filter(sampleReport(), "empty", "")
	require.NoError(t, err, "a namespace without jobs is no error")
	var out bytes.Buffer
	require.NoError(t, Print(&out, Result{Report: r}, "table", "empty"))
	assert.True(t, strings.HasPrefix(out.String(), "No TrainingJobs in namespace empty.\n"), out.String())
}

// TestPrintWideAndYAML: -o wide lists every field of the configuration,
// -o yaml is the Result.
func TestPrintWideAndYAML(t *testing.T) {
	res := Result{Report: sampleReport(), Configuration: config.Default(), Source: "the defaults"}
	var wide bytes.Buffer
	require.NoError(t, Print(&wide, res, "wide", ""))
	assert.Contains(t, wide.String(), "options: logLevel=info workers=2 ")
	assert.Contains(t, wide.String(), " leaderElection.resourceNamespace=paddlecloud ")

	var out bytes.Buffer
	require.NoError(t, Print(&out, res, "yaml", ""))
	var back struct {
		Source        string `json:"source"`
		Configuration struct {
			Kind string `json:"kind"`
		} `json:"configuration"`
		Jobs []struct {
			Limit string `json:"limit"`
		} `json:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &back), "%s", out.String())
	assert.Equal(t, "the defaults", back.Source)
	assert.Equal(t, "EDLConfiguration", back.Configuration.Kind)
	require.Len(t, back.Jobs, 4)
	assert.Equal(t, "Load", back.Jobs[0].Limit)

	assert.Error(t, Print(&out, res, "xml", ""))
}

func TestExplainPrintsTheQueue(t *testing.T) {
	r := sampleReport()
	r.Admitted = []planner.Admission{{Job: "ns/small", Reason: "its minimum, 1 trainer, needs 1 CPU and fits on 1 node"}}
	r.Preempted = []planner.Preemption{{Job: "other/low", Priority: 0, By: "ns/urgent", ByPriority: 1000, Reason: "stopped whole"}}
	r.Queue = []planner.Waiting{
		{Job: "ns/big", Position: 1, Of: 2, Kind: v1.ReasonWaitingForAdmission, Head: true, Reason: "position 1 of 2 in the queue: its minimum needs 14 CPU"},
		{Job: "other/q", Position: 2, Of: 2, Kind: v1.ReasonWaitingForQuota, Reason: "position 2 of 2 in the queue: namespace other quota requests.cpu: 6 CPU left, the minimum needs 14 CPU"},
	}
	var out bytes.Buffer
	require.NoError(t, Print(&out, Result{Report: r}, "table", ""))
	text := out.String()
	assert.Contains(t, text, "queue:\n  admitted     ns/small: its minimum, 1 trainer, needs 1 CPU and fits on 1 node\n")
	assert.Contains(t, text, "  preempted    other/low (priority 0) for ns/urgent (priority 1000): stopped whole\n")
	assert.Contains(t, text, "  waiting      ns/big (WaitingForAdmission, head of the queue: its nodes are reserved): position 1 of 2")
	assert.Contains(t, text, "  waiting      other/q (WaitingForQuota): position 2 of 2 in the queue: namespace other quota requests.cpu: 6 CPU left")
	assert.Less(t, strings.Index(text, "queue:"), strings.Index(text, "cluster:"), "the queue comes before the cluster line")

	// Filtered to a namespace, the queue keeps its jobs, and a preemption
	// for or of them; the report filtered is not changed.
	f, err := Filter(r, "other", "")
	require.NoError(t, err)
	require.Len(t, f.Queue, 1)
	assert.Equal(t, "other/q", f.Queue[0].Job)
	assert.Empty(t, f.Admitted)
	assert.Len(t, f.Preempted, 1)
	assert.Len(t, r.Queue, 2, "Filter leaves its input alone")
	assert.Equal(t, "ns/big", r.Queue[0].Job, "Filter leaves its input alone")

	out.Reset()
	require.NoError(t, Print(&out, Result{Report: sampleReport()}, "table", ""))
	assert.NotContains(t, out.String(), "queue:", "no queue, no section")
}
