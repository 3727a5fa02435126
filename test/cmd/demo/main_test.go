package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/experiment"
)

func TestPrintTable(t *testing.T) {
	var out bytes.Buffer
	printTable(&out, experiment.Sample{
		At: 12 * time.Second, Utilization: 0.875, WebDesired: 6, WebRunning: 4, WebPending: 2,
		Jobs: []experiment.JobView{
			{Name: "example", Phase: v1.PhaseRunning, Running: 4, Desired: 4, Min: 2, Max: 6, Fulfillment: 0.5},
			{Name: "fresh", Running: 0, Min: 2, Max: 8, Fulfillment: -0.33},
			{Name: "real", Phase: v1.PhaseRunning, Running: 1, Desired: 1, Min: 1, Max: 4},
		},
	}, "web 6", map[string]bool{"real": true})
	text := out.String()
	assert.Contains(t, text, "t= 12s [web 6]")
	assert.Contains(t, text, "CPU utilization  87.5%")
	assert.Contains(t, text, "4/6 running, 2 pending")
	lines := strings.Split(text, "\n")
	var example, fresh, real string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "real"):
			real = strings.Join(strings.Fields(l), " ")
		case strings.Contains(l, "example"):
			example = strings.Join(strings.Fields(l), " ")
		case strings.Contains(l, "fresh"):
			fresh = strings.Join(strings.Fields(l), " ")
		}
	}
	assert.Equal(t, "example Running 4/2/6 4 0.50 ████··", example)
	assert.Equal(t, "fresh (new) 0/2/8 0 - ········", fresh, "no phase yet, and no fulfillment below the minimum")
	assert.Equal(t, "real (real pods) Running 1/1/4 1 0.00 █···", real, "a job on the real node is marked")
}

func TestDirEnv(t *testing.T) {
	t.Setenv("EDL_CACHE_DIR", "/cache")
	t.Setenv("EDL_CLUSTER_DIR", "")
	assert.Equal(t, "", dirEnv(filepath.Join("/cache", "cluster")), "the standard directory needs nothing")
	assert.Equal(t, "EDL_CLUSTER_DIR=/tmp/demo ", dirEnv("/tmp/demo"))
}

func TestSummarizeAndCheck(t *testing.T) {
	view := func(name string, running, desired int) experiment.JobView {
		return experiment.JobView{Name: name, Running: running, Desired: desired, Min: 1, Max: 6}
	}
	samples := []experiment.Sample{
		{At: 2 * time.Second, Utilization: 0.5, Jobs: []experiment.JobView{view("example", 1, 1), view("resnet", 1, 1), view("ctr", 1, 1)}},
		{At: 4 * time.Second, Utilization: 1, WebPending: 2, Jobs: []experiment.JobView{view("example", 4, 4), view("resnet", 3, 3), view("ctr", 2, 2)}},
		{At: 6 * time.Second, Utilization: 0.9, Jobs: []experiment.JobView{view("example", 3, 3), view("resnet", 2, 3), view("ctr", 2, 2)}},
	}
	timings := []experiment.JobTiming{
		{Name: "example", Submitted: 0, Running: 2 * time.Second},
		{Name: "resnet", Submitted: time.Second, Running: 3 * time.Second},
		{Name: "ctr", Submitted: time.Second, Running: 5 * time.Second},
	}
	waits := []experiment.PodWait{
		{Name: "w1", Created: 3 * time.Second, Running: 4 * time.Second},
		{Name: "w2", Created: 3 * time.Second, Running: 6 * time.Second},
		{Name: "w3", Created: 5 * time.Second, Running: -1},
	}
	r := summarize(samples, timings, waits)
	assert.InDelta(t, 0.8, r.meanUtilization, 1e-9)
	assert.Equal(t, 2, r.mostWebPending)
	assert.Equal(t, 3*time.Second, r.longestWebWait, "a pod still pending is not a wait that ended")
	require.Len(t, r.jobs, 3)
	assert.Equal(t, jobResult{name: "resnet", min: 1, started: true, startIn: 2 * time.Second, lo: 1, hi: 3, last: 2, lastWant: 3}, r.jobs[1])
	require.NoError(t, check(r, 3))

	var out bytes.Buffer
	summary(&out, r)
	assert.Contains(t, out.String(), "mean CPU allocation utilization 80.0%; web pods pending at most 2 at once, the longest waited 3.0 s")

	bad := r
	bad.jobs = slices.Clone(r.jobs)
	bad.meanUtilization = 0.3
	bad.longestWebWait = time.Minute
	bad.jobs[0].started = false
	bad.jobs[1].hi = 1
	bad.jobs[2].lastWant = 1
	err := check(bad, 3)
	require.Error(t, err)
	for _, want := range []string{"utilization 30.0% < 60%", "waited 60.0 s", "job example never reached Running",
		"job resnet never grew above its minimum 1", "job ctr did not grow back after the wave"} {
		assert.Contains(t, err.Error(), want)
	}
	bad.jobs = bad.jobs[:2]
	assert.ErrorContains(t, check(bad, 3), "2 jobs seen, want 3")
}

// TestProductionArgs: the demo's edl runs with leader election in
// paddlecloud, as the Deployment does, so that kubectl edl explain reads the
// options it publishes on its Lease.
func TestProductionArgs(t *testing.T) {
	args := productionArgs(experiment.EDLArgs("kc", 2*time.Second, experiment.On))
	assert.NotContains(t, args, "-leader_elect=false")
	assert.Contains(t, args, "-leader_elect=true")
	i := slices.Index(args, "-leader_elect_namespace")
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "paddlecloud", args[i+1])
	assert.Contains(t, strings.Join(args, " "), "-autoscale_interval 2s")
}
