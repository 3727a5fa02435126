package trace

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// testData is the Pollux trace the tests read (a copy of
// /work/shared/traces/pollux).
var testData = filepath.Join("testdata", "pollux")

// testWorkload is workload 1 at 1.0× load.
var testWorkload = filepath.Join(testData, "workloads", "workload-1.csv")

var (
	appsOnce sync.Once
	apps     map[string]*Application
	appsErr  error
)

// loadApps reads the trace's applications once for all tests.
func loadApps(tb testing.TB) map[string]*Application {
	tb.Helper()
	appsOnce.Do(func() { apps, appsErr = LoadApplications(filepath.Join(testData, "traces")) })
	require.NoError(tb, appsErr)
	return apps
}
