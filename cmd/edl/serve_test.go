package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

func TestHealthEndpoints(t *testing.T) {
	h := &health{watchdog: leaderelection.NewLeaderHealthzAdaptor(watchdogTimeout)}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "edl_leader 1\n") })
	handler := h.handler(metrics)

	code, body := get(t, handler, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready before the informers sync")
	assert.Contains(t, body, "informers not synced")
	h.synced.Store(true)
	code, _ = get(t, handler, "/readyz")
	assert.Equal(t, http.StatusOK, code)

	// The watchdog passes while no elector is attached or the lease is fresh.
	code, body = get(t, handler, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	code, body = get(t, handler, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "edl_leader 1\n", body)

	code, _ = get(t, handler, "/nope")
	assert.Equal(t, http.StatusNotFound, code)
}

// stubAPIServer answers the discovery requests edl starts with, and 404 to
// everything else (so a Lease create finds no namespace). It returns a
// kubeconfig for it.
func stubAPIServer(t *testing.T) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/version":
			_, _ = io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		case "/apis/paddlepaddle.org/v1":
			_, _ = io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"paddlepaddle.org/v1","resources":[{"name":"trainingjobs","singularName":"trainingjob","namespaced":true,"kind":"TrainingJob","verbs":["get","list","watch"]}]}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"namespaces \"paddlecloud\" not found","details":{"name":"paddlecloud","kind":"namespaces"}}`)
		}
	}))
	t.Cleanup(server.Close)
	return writeKubeconfig(t, server.URL)
}

// TestStartupProblemsAreOneLine: problems found after connecting give one
// line naming the flag to change, too.
func TestStartupProblemsAreOneLine(t *testing.T) {
	kubeconfig := stubAPIServer(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"taken HTTP port", []string{"-leader_elect=false", "-http_addr", taken.Addr().String()},
			"edl: cannot listen on -http_addr " + taken.Addr().String()},
		{"missing lease namespace", []string{"-http_addr", ""},
			"edl: the namespace paddlecloud of the leader Lease does not exist: create it, or pass -leader_elect_namespace, or -leader_elect=false for a single replica"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				defer close(done)
				code, _, stderr = runEDL(append([]string{"-kubeconfig", kubeconfig, "-log_level", "error"}, c.args...)...)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("edl did not give up")
			}
			assert.Equal(t, 1, code)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.Len(t, lines, 1, stderr)
			assert.Equal(t, c.want, strings.SplitN(lines[0], ": listen tcp", 2)[0])
		})
	}
}

func TestElectionFlags(t *testing.T) {
	t.Setenv(podNamespaceEnv, "")
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.leaderElect, "on by default")
	assert.Equal(t, "paddlecloud", o.leaderElectNS)
	assert.Equal(t, []time.Duration{12 * time.Second, 8 * time.Second, time.Second}, []time.Duration{o.leaseDuration, o.renewDeadline, o.retryPeriod})
	assert.Equal(t, ":8080", o.httpAddr)

	// Without election its timings are not checked; an empty -http_addr
	// disables the server.
	o, err = parseFlags([]string{"-leader_elect=false", "-leader_elect_renew_deadline", "1h", "-http_addr", ""}, io.Discard)
	require.NoError(t, err)
	assert.False(t, o.leaderElect)
	assert.Empty(t, o.httpAddr)
}

// TestHealthzFailsWhenTheLeaderStopsRenewing: a leader whose renewal hangs
// (an API call that never returns) still believes it leads; once its lease
// is older than the lease duration plus the watchdog's tolerance, /healthz
// fails, so that the liveness probe restarts it.
func TestHealthzFailsWhenTheLeaderStopsRenewing(t *testing.T) {
	client := leaseClient()
	var hang atomic.Bool
	release := make(chan struct{})
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if hang.Load() {
			<-release
		}
		return false, nil, nil
	})
	var leading atomic.Bool
	e := testElection(client, "a", &leading)
	e.watchdog = leaderelection.NewLeaderHealthzAdaptor(100 * time.Millisecond)
	handler := (&health{watchdog: e.watchdog}).handler(http.NotFoundHandler())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runElected(ctx, e, func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		})
	}()
	defer func() {
		close(release)
		cancel()
		select {
		case <-done:
		case <-time.After(patience):
			t.Error("runElected did not return")
		}
	}()

	require.Eventually(t, leading.Load, patience, 10*time.Millisecond, "never led")
	code, _ := get(t, handler, "/healthz")
	assert.Equal(t, http.StatusOK, code, "a leader that renews is healthy")

	hang.Store(true)
	var body string
	require.Eventually(t, func() bool {
		code, body = get(t, handler, "/healthz")
		return code == http.StatusInternalServerError
	}, patience, 20*time.Millisecond, "a leader that cannot renew stayed healthy")
	assert.Contains(t, body, "leader election")
	assert.True(t, leading.Load(), "the hung leader still believes it leads: only the probe can help")
}
