package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
		},
	}, "web 6")
	text := out.String()
	assert.Contains(t, text, "t= 12s [web 6]")
	assert.Contains(t, text, "CPU utilization  87.5%")
	assert.Contains(t, text, "4/6 running, 2 pending")
	lines := strings.Split(text, "\n")
	var example, fresh string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "example"):
			example = strings.Join(strings.Fields(l), " ")
		case strings.Contains(l, "fresh"):
			fresh = strings.Join(strings.Fields(l), " ")
		}
	}
	assert.Equal(t, "example Running 4/2/6 4 0.50 ████··", example)
	assert.Equal(t, "fresh (new) 0/2/8 0 - ········", fresh, "no phase yet, and no fulfillment below the minimum")
}

func TestDirEnv(t *testing.T) {
	t.Setenv("EDL_CACHE_DIR", "/cache")
	t.Setenv("EDL_CLUSTER_DIR", "")
	assert.Equal(t, "", dirEnv(filepath.Join("/cache", "cluster")), "the standard directory needs nothing")
	assert.Equal(t, "EDL_CLUSTER_DIR=/tmp/demo ", dirEnv("/tmp/demo"))
}
