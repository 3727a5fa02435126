package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runEDL runs the command line and returns its exit code, stdout and stderr.
func runEDL(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestBadInvocationsGiveOneLine checks the promise that a wrong command line
// or an unusable cluster gives one clear line naming the problem, a non-zero
// exit and no stack trace.
func TestBadInvocationsGiveOneLine(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "missing-kubeconfig")
	garbage := filepath.Join(dir, "garbage-kubeconfig")
	require.NoError(t, os.WriteFile(garbage, []byte("this: [is not a kubeconfig"), 0o600))
	// Nothing listens on port 1 of the loopback address: connection refused.
	unreachable := writeKubeconfig(t, "https://127.0.0.1:1")

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined: -nope"},
		{"stray argument", []string{"extra"}, 2, `unexpected argument "extra"`},
		{"bad log level", []string{"-log_level", "loud"}, 2, `invalid value "loud" for flag -log_level`},
		{"max_load_desired out of range", []string{"-max_load_desired", "1.5"}, 2, "-max_load_desired: must be greater than 0 and at most 1"},
		{"max_load_desired not a number", []string{"-max_load_desired", "most"}, 2, `invalid value "most" for flag -max_load_desired`},
		{"rebalance_gap zero", []string{"-rebalance_gap", "0"}, 2, "invalid value 0 for flag -rebalance_gap: must be greater than 0 and at most 1"},
		{"rebalance_gap above 1", []string{"-rebalance_gap", "1.5"}, 2, "invalid value 1.5 for flag -rebalance_gap: must be greater than 0 and at most 1"},
		{"policy unknown", []string{"-policy", "fastest"}, 2, `invalid value "fastest" for flag -policy: must be goodput or fulfillment`},
		{"zero qps", []string{"-kube_api_qps", "0"}, 2, "invalid value 0 for flag -kube_api_qps: must be positive"},
		{"qps not a number", []string{"-kube_api_qps", "NaN"}, 2, "invalid value NaN for flag -kube_api_qps: must be positive"},
		{"zero burst", []string{"-kube_api_burst", "0"}, 2, "invalid value 0 for flag -kube_api_burst: must be at least 1"},
		{"bad http_addr", []string{"-http_addr", "8080"}, 2, `invalid value "8080" for flag -http_addr: must be host:port or :port`},
		{"bad lease namespace", []string{"-leader_elect_namespace", "Paddle_Cloud"}, 2, `invalid value "Paddle_Cloud" for flag -leader_elect_namespace`},
		{"zero lease duration", []string{"-leader_elect_lease_duration", "0s"}, 2, "invalid value 0s for flag -leader_elect_lease_duration: must be positive"},
		{"renew deadline not below the lease", []string{"-leader_elect_renew_deadline", "12s"}, 2,
			"invalid value 12s for flag -leader_elect_renew_deadline: must be less than -leader_elect_lease_duration (12s)"},
		{"retry period too long for the renew deadline", []string{"-leader_elect_retry_period", "7s"}, 2,
			"invalid value 7s for flag -leader_elect_retry_period: 1.2 times it must be less than -leader_elect_renew_deadline (8s)"},
		{"unreadable kubeconfig", []string{"-kubeconfig", unreadable}, 1, "cannot load -kubeconfig " + unreadable},
		{"garbage kubeconfig", []string{"-kubeconfig", garbage}, 1, "cannot load -kubeconfig " + garbage},
		{"unreachable API server", []string{"-kubeconfig", unreachable}, 1, "cannot reach the API server at https://127.0.0.1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runEDL(c.args...)
			assert.Equal(t, c.code, code)
			assert.Empty(t, stdout)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.Len(t, lines, 1, "want exactly one line, got:\n%s", stderr)
			assert.True(t, strings.HasPrefix(lines[0], "edl: "), lines[0])
			assert.Contains(t, lines[0], c.want)
			assert.NotContains(t, stderr, "goroutine ")
		})
	}
}

// TestMissingCRDIsOneLine: an API server that answers but does not serve
// TrainingJobs gets one line saying how to install the CRD. The server here
// is an HTTP stub of the two discovery paths edl asks for.
func TestMissingCRDIsOneLine(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer server.Close()
	kubeconfig := writeKubeconfig(t, server.URL)

	code, _, stderr := runEDL("-kubeconfig", kubeconfig)
	assert.Equal(t, 1, code)
	assert.Equal(t, "edl: the API server at "+server.URL+" does not serve paddlepaddle.org/v1 TrainingJobs: install the CRD with 'kubectl create -f thirdpartyresource.yaml'\n", stderr)
}

// writeKubeconfig writes a kubeconfig for the API server at url, with a
// bearer token, and returns its path.
func writeKubeconfig(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+url+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	return path
}

func TestVersionAndHelp(t *testing.T) {
	code, stdout, stderr := runEDL("-version")
	assert.Equal(t, 0, code)
	assert.Equal(t, "edl "+version+"\n", stdout)
	assert.Empty(t, stderr)

	code, stdout, _ = runEDL("-help")
	assert.Equal(t, 0, code)
	for _, flag := range []string{"-kubeconfig", "-log_level", "-max_load_desired", "-version"} {
		assert.Contains(t, stdout, flag)
	}
}

func TestLoggerWritesLogfmtAtItsLevel(t *testing.T) {
	var buf bytes.Buffer
	logger, err := newLogger("info", &buf)
	require.NoError(t, err)
	logger.Debug("hidden", "k", 1)
	logger.Info("scaled trainers", "job", "team-a/mnist", "from", 2, "to", 6)
	out := buf.String()
	assert.NotContains(t, out, "hidden")
	assert.Regexp(t, `^t=\S+ lvl=info msg="scaled trainers" job=team-a/mnist from=2 to=6\n$`, out)
}

func TestOneLineJoinsErrors(t *testing.T) {
	assert.NoError(t, oneLine(nil))
	err := oneLine(errors.Join(errors.New("the controller failed"), nil, errors.New("the autoscaler failed")))
	assert.EqualError(t, err, "the controller failed; the autoscaler failed")
}

func TestClientConfigCarriesTheRateLimit(t *testing.T) {
	kubeconfig := writeKubeconfig(t, "https://127.0.0.1:1")
	for _, c := range []struct {
		args  []string
		qps   float32
		burst int
	}{
		{nil, 100, 200},
		{[]string{"-kube_api_qps", "7.5", "-kube_api_burst", "12"}, 7.5, 12},
	} {
		opts, err := parseFlags(append([]string{"-kubeconfig", kubeconfig}, c.args...), io.Discard)
		require.NoError(t, err)
		cfg, err := clientConfig(opts)
		require.NoError(t, err)
		assert.Equal(t, c.qps, cfg.QPS, c.args)
		assert.Equal(t, c.burst, cfg.Burst, c.args)
		assert.Equal(t, "edl/"+version, cfg.UserAgent)
	}
}
