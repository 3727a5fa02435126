package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// data is the trace the tests run on, from this directory.
var data = filepath.Join("..", "..", "trace", "testdata", "pollux")

// tinyWorkload writes a workload of three short jobs and returns its path.
func tinyWorkload(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workloads-2.0")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "tiny.csv")
	require.NoError(t, os.WriteFile(path, []byte("name,time,application,num_replicas,batch_size\n"+
		"ncf-0,0,ncf,1,32768\ncifar10-1,20,cifar10,6,2048\nncf-2,40,ncf,1,32768\n"), 0o644))
	return path
}

// TestRunWritesResults: a run writes summary.csv with a row per workload
// and policy, jobs.csv with a row per job, and the plot.
func TestRunWritesResults(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code := run([]string{"-data", data, "-workloads", tinyWorkload(t), "-policies", "static,fulfillment", "-out", out})
	require.Equal(t, 0, code)
	f, err := os.Open(filepath.Join(out, "summary.csv"))
	require.NoError(t, err)
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, f.Close())
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, []string{"workload", "policy", "avg_jct", "p50_jct", "p99_jct", "makespan", "utilization", "resizes_per_job_hour"}, rows[0])
	assert.Equal(t, []string{"2.0x-tiny", "static"}, rows[1][:2])
	assert.Equal(t, []string{"2.0x-tiny", "fulfillment"}, rows[2][:2])
	assert.FileExists(t, filepath.Join(out, "jobs.csv"))
	assert.FileExists(t, filepath.Join(out, "jct-2.0x-tiny.png"))
}

// TestRunErrors: a bad flag, an unknown policy or a missing file is an
// error that names it, and ends the command with 1.
func TestRunErrors(t *testing.T) {
	out, tiny := t.TempDir(), tinyWorkload(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown policy", []string{"-data", data, "-workloads", tiny, "-policies", "fulfillment,fastest", "-out", out}, `unknown policy "fastest"`},
		{"unknown scoring", []string{"-data", data, "-scoring", "Random", "-out", out}, `-scoring "Random"`},
		{"missing file", []string{"-data", data, "-workloads", filepath.Join(out, "none.csv"), "-out", out}, "none.csv"},
		{"no traces", []string{"-data", out, "-out", out}, filepath.Join(out, "traces")},
		{"argument", []string{"-data", data, "extra"}, `unexpected arguments ["extra"]`},
		{"one workload twice", []string{"-data", data, "-workloads", tiny + "," + tiny, "-out", out}, "both named 2.0x-tiny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorContains(t, simulate(tc.args), tc.want)
		})
	}
	assert.Equal(t, 1, run([]string{"-policies", "nope"}))
}
