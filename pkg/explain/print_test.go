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

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/config"
)

func sampleReport() autoscaler.Report {
	return autoscaler.Report{
		Options: autoscaler.Options{MaxLoadDesired: 0.97},
		Cluster: autoscaler.ClusterLine{Nodes: 4, Pending: 1,
			Allocatable: autoscaler.Resources{CPUMilli: 64000, MemoryMega: 262144},
			Requested:   autoscaler.Resources{CPUMilli: 61000, MemoryMega: 90000},
			Load:        map[string]float64{"CPU": 0.953125, "memory": 0.3433}},
		Jobs: []autoscaler.JobReport{
			{Namespace: "ns", Name: "alpha", Phase: "Running", Running: 11, Explanation: autoscaler.Explanation{
				Job: "ns/alpha", Limit: autoscaler.LimitLoad, From: 11, To: 11, Min: 2, Max: 20, Placed: 11, Fulfillment: 0.5,
				Message: "one more trainer (4 CPU) would take CPU requests past max_load_desired 0.97: 61 CPU of 64 CPU requested (load 0.953)"}},
			{Namespace: "ns", Name: "beta", Phase: "Running", Running: 3, Explanation: autoscaler.Explanation{
				Job: "ns/beta", Limit: autoscaler.LimitCoolDown, From: 3, To: 3, Min: 1, Max: 10, Placed: 3, Fulfillment: 0.222,
				CoolDownLeft: 7 * time.Second, Message: "scaled down at …"}},
			{Namespace: "ns", Name: "gamma", Phase: "Running", Running: 1, Next: &autoscaler.ScaleAction{Job: "ns/gamma", From: 1, To: 3,
				Cause: autoscaler.CauseIdle, Reason: "scale up by 2: …"}, Explanation: autoscaler.Explanation{
				Job: "ns/gamma", Limit: autoscaler.LimitAtMax, From: 1, To: 3, Min: 1, Max: 3, Placed: 3, Fulfillment: 1,
				Message: "grows by 2 to its maximum, 3 of 1..3 trainers"}},
			{Namespace: "other", Name: "new", Phase: "Pending", Explanation: autoscaler.Explanation{
				Job: "other/new", Limit: autoscaler.LimitNotRunning, Min: 2, Max: 4,
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
		"options: gpuResources=nvidia.com/gpu autoscaler.interval=5s autoscaler.maxLoadDesired=0.97 autoscaler.cooldownCycles=3 autoscaler.maxGrowPerCycle=0 autoscaler.rebalanceGap=0.1 autoscaler.dryRun=false autoscaler.gangAdmission=true (from the defaults)\n",
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
