package progress

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The helper's tests run example/edl_progress.py with the machine's
// python3 against an HTTPS server that plays the API server's ConfigMap
// endpoint, with the interval shortened to one second.

const helperInterval = time.Second

type write struct {
	at   time.Time
	data map[string]string
}

// apiServer records the helper's patches; last is the report time the
// ConfigMap holds when the helper first reads it, status what a patch
// answers.
type apiServer struct {
	*httptest.Server
	mu      sync.Mutex
	writes  []write
	gets    int
	auth    []string
	path    []string
	last    float64
	lastRun string
	refusal bool
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.path = append(s.path, r.Method+" "+r.URL.Path)
		switch r.Method {
		case http.MethodGet:
			s.gets++
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"time": strconv.FormatFloat(s.last, 'f', 3, 64), "run": s.lastRun}})
		case http.MethodPatch:
			if s.refusal {
				http.Error(w, `{"reason":"Forbidden"}`, http.StatusForbidden)
				return
			}
			var body struct{ Data map[string]string }
			b, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(b, &body); err != nil || r.Header.Get("Content-Type") != "application/merge-patch+json" {
				http.Error(w, "bad patch", http.StatusBadRequest)
				return
			}
			s.writes = append(s.writes, write{time.Now(), body.Data})
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// runHelper runs the Python program script with the helper importable,
// the service account's files in a directory of its own, and env.
func runHelper(t *testing.T, s *apiServer, script string, env ...string) (stderr string) {
	t.Helper()
	sa := t.TempDir()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	require.NoError(t, os.WriteFile(filepath.Join(sa, "ca.crt"), cert, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sa, "token"), []byte("job-a-token\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sa, "namespace"), []byte("team-a"), 0o600))
	u, err := url.Parse(s.URL)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c", script)
	example, err := filepath.Abs("../../example")
	require.NoError(t, err)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "PYTHONPATH=" + example, "EDL_SERVICEACCOUNT_DIR=" + sa,
		"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port(),
		"EDL_PROGRESS_INTERVAL=" + strconv.Itoa(int(helperInterval.Seconds())), "PYTHONDONTWRITEBYTECODE=1",
	}, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// burst reports 0, 100, 200, ... as fast as it can for 2.5 s, then lives
// 1.5 s more: the report of its last moment must reach the ConfigMap.
const burst = `
import time, edl_progress
p = edl_progress.Progress(total=1000000, batch=64)
start, done = time.time(), 0
while time.time() - start < 2.5:
    done += 100
    p.report(done)
    time.sleep(0.001)
print("last", done, flush=True)
time.sleep(1.5)
`

// TestHelperCoalescesReportsToTheRate: a training that reports a thousand
// times in 2.5 s writes at most once an interval, and its last report is
// written, not lost.
func TestHelperCoalescesReportsToTheRate(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t)
	out := runHelper(t, s, burst, "EDL_PROGRESS_CONFIGMAP=job-a-progress", "WORLD_SIZE=3", "RANK=0")
	var last int
	_, err := fmt.Sscanf(out, "last %d", &last)
	require.NoError(t, err, out)
	require.Greater(t, last, 1000, "it reported many times")

	s.mu.Lock()
	defer s.mu.Unlock()
	require.GreaterOrEqual(t, len(s.writes), 2)
	assert.LessOrEqual(t, len(s.writes), 4, "2.5 s of reports and 1.5 s after: at most four writes")
	for i := 1; i < len(s.writes); i++ {
		gap := s.writes[i].at.Sub(s.writes[i-1].at)
		assert.GreaterOrEqual(t, gap, helperInterval-50*time.Millisecond, "write %d came %s after the last", i, gap)
	}
	final := s.writes[len(s.writes)-1].data
	assert.Equal(t, strconv.Itoa(last), final["done"], "the last report is coalesced, not lost")
	r, ok, err := Parse(final)
	require.NoError(t, err, "the helper writes what the controller reads")
	require.True(t, ok)
	assert.Equal(t, int64(1000000), r.Total)
	assert.Equal(t, int64(64), r.Batch)
	assert.Equal(t, int32(3), r.Trainers, "WORLD_SIZE")
	assert.NotEmpty(t, r.Run)
	assert.Equal(t, 1, s.gets, "one read of the last report, at start")
	for i, a := range s.auth {
		assert.Equal(t, "Bearer job-a-token", a)
		assert.Contains(t, s.path[i], "/api/v1/namespaces/team-a/configmaps/job-a-progress")
	}
}

// TestHelperKeepsTheRateAcrossRestarts: a process that starts right after
// another's report waits until the interval after it.
func TestHelperKeepsTheRateAcrossRestarts(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t)
	start := time.Now()
	s.last = float64(start.UnixNano()) / 1e9 // a report just now
	runHelper(t, s, "import time, edl_progress\np = edl_progress.Progress()\np.report(5)\ntime.sleep(2.2)\n",
		"EDL_PROGRESS_CONFIGMAP=job-a-progress")
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.writes, 1)
	assert.GreaterOrEqual(t, s.writes[0].at.Sub(start), helperInterval-50*time.Millisecond, "not before the interval after the last report")
}

// TestHelperWritesNothingWhereItMustNot: a rank other than 0, a process
// outside EDL, and a refused write never stop the training.
func TestHelperWritesNothingWhereItMustNot(t *testing.T) {
	t.Parallel()
	script := "import edl_progress\np = edl_progress.Progress()\np.report(1)\np.close()\nprint('trained')\n"
	for name, env := range map[string][]string{
		"rank 1":         {"EDL_PROGRESS_CONFIGMAP=job-a-progress", "RANK=1"},
		"Horovod rank 1": {"EDL_PROGRESS_CONFIGMAP=job-a-progress", "HOROVOD_RANK=1"},
		"outside EDL":    {},
	} {
		t.Run(name, func(t *testing.T) {
			s := newAPIServer(t)
			assert.Contains(t, runHelper(t, s, script, env...), "trained")
			assert.Empty(t, s.path, "no request")
		})
	}
	t.Run("refused", func(t *testing.T) {
		s := newAPIServer(t)
		s.refusal = true
		out := runHelper(t, s, "import time, edl_progress\np = edl_progress.Progress()\np.report(1)\ntime.sleep(1.5)\np.report(2)\ntime.sleep(1.5)\nprint('trained')\n",
			"EDL_PROGRESS_CONFIGMAP=job-a-progress")
		assert.Contains(t, out, "trained")
		assert.Contains(t, out, "edl_progress: cannot write ConfigMap job-a-progress: HTTP 403")
		assert.Equal(t, 1, strings.Count(out, "edl_progress:"), "one line, however many writes fail")
	})
}

// TestHelperElectsOneWriter: a training without ranks (elect=True) writes
// only while the report in the ConfigMap is its own or nobody's, or has
// not been renewed for three intervals.
func TestHelperElectsOneWriter(t *testing.T) {
	t.Parallel()
	script := "import time, edl_progress\np = edl_progress.Progress(elect=True)\nfor i in range(25):\n    p.report(i)\n    time.sleep(0.1)\ntime.sleep(0.5)\n"
	held := newAPIServer(t)
	held.last, held.lastRun = float64(time.Now().Add(time.Minute).UnixNano())/1e9, "another-trainer/7/1" // renewed, for the run of the test
	runHelper(t, held, script, "EDL_PROGRESS_CONFIGMAP=job-a-progress")
	held.mu.Lock()
	assert.Empty(t, held.writes, "another process holds the report")
	assert.Positive(t, held.gets)
	held.mu.Unlock()

	lapsed := newAPIServer(t)
	lapsed.last, lapsed.lastRun = float64(time.Now().Add(-5*helperInterval).UnixNano())/1e9, "another-trainer/7/1"
	runHelper(t, lapsed, script, "EDL_PROGRESS_CONFIGMAP=job-a-progress")
	lapsed.mu.Lock()
	defer lapsed.mu.Unlock()
	assert.NotEmpty(t, lapsed.writes, "a report not renewed for three intervals is taken over")
}
