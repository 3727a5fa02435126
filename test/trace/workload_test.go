package trace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadWorkload: every row of workload-1 is read, with its work at its
// batch.
func TestReadWorkload(t *testing.T) {
	apps := loadApps(t)
	w, err := ReadWorkload(testWorkload, apps)
	require.NoError(t, err)
	assert.Equal(t, "1.0x-workload-1", w.Name)
	require.Len(t, w.Jobs, 160)
	first := w.Jobs[0]
	assert.Equal(t, "cifar10-0", first.Name)
	assert.Equal(t, 107.0, first.Arrival)
	assert.Equal(t, apps["cifar10"], first.App)
	assert.Equal(t, int32(6), first.Replicas)
	assert.Equal(t, 2048.0, first.Batch)
	want, err := apps["cifar10"].Work(2048)
	require.NoError(t, err)
	assert.Equal(t, want, first.Work)
}

// TestReadWorkloadErrors: a bad file is an error that names the file, the
// line and the column.
func TestReadWorkloadErrors(t *testing.T) {
	apps := loadApps(t)
	const header = "name,time,application,num_replicas,batch_size\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"header", "name,time,app,num_replicas,batch_size\na,1,bert,1,12\n", "line 1: header"},
		{"no rows", header, "no rows"},
		{"unknown application", header + "a,1,bert,1,12\nb,2,resnet,1,12\n", `line 3: column application "resnet"`},
		{"time not a number", header + "a,soon,bert,1,12\n", `line 2: column time "soon"`},
		{"negative time", header + "a,-1,bert,1,12\n", `line 2: column time "-1": below 0`},
		{"no replicas", header + "a,1,bert,0,12\n", `line 2: column num_replicas "0"`},
		{"batch outside the files", header + "a,1,bert,1,1000\n", `line 2: column batch_size "1000": application bert: batch size 1000`},
		{"duplicate name", header + "a,1,bert,1,12\na,2,bert,1,12\n", `line 3: column name "a": the name of line 2 too`},
		{"short row", header + "a,1,bert,1\n", "wrong number of fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.csv")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
			_, err := ReadWorkload(path, apps)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestWorkloadName: workloads of different load directories are told
// apart.
func TestWorkloadName(t *testing.T) {
	for path, want := range map[string]string{
		"data/workloads/workload-1.csv":     "1.0x-workload-1",
		"data/workloads-2.0/workload-1.csv": "2.0x-workload-1",
		"workloads-0.5/workload-3.csv":      "0.5x-workload-3",
		"/tmp/mine/workload-1.csv":          "mine-workload-1",
		"busy.csv":                          "busy",
	} {
		assert.Equal(t, want, WorkloadName(path), path)
	}
}
