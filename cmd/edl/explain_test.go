package main

import (
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

// TestExplainBadInvocationsGiveOneLine: a wrong command line, an unreadable
// kubeconfig or an unknown namespace is one line and exit code 2; a server
// that cannot be reached is one line and exit code 1.
func TestExplainBadInvocationsGiveOneLine(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "missing-kubeconfig")
	garbage := filepath.Join(dir, "garbage-kubeconfig")
	require.NoError(t, os.WriteFile(garbage, []byte("this: [is not a kubeconfig"), 0o600))
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
		case "/apis/paddlepaddle.org/v1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"paddlepaddle.org/v1","resources":[{"name":"trainingjobs","namespaced":true,"kind":"TrainingJob","verbs":["get","list","watch"]}]}`))
		case "/api/v1/namespaces/nowhere":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"details":{"name":"nowhere","kind":"namespaces"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer server.Close()
	stub := writeKubeconfig(t, server.URL)

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined: -nope"},
		{"two jobs", []string{"a", "b"}, 2, `unexpected argument "b": name at most one job`},
		{"bad output", []string{"-o", "yaml"}, 2, `invalid value "yaml" for flag -o: must be table or json`},
		{"a controller flag out of range", []string{"-max_load_desired", "1.5"}, 2, "-max_load_desired: must be greater than 0 and at most 1"},
		{"unreadable kubeconfig", []string{"-kubeconfig", unreadable}, 2, "cannot load -kubeconfig " + unreadable},
		{"garbage kubeconfig", []string{"-kubeconfig", garbage}, 2, "cannot load -kubeconfig " + garbage},
		{"unknown namespace", []string{"-kubeconfig", stub, "-n", "nowhere"}, 2, `namespace "nowhere" not found`},
		{"unknown namespace of a job", []string{"-kubeconfig", stub, "mnist", "-n", "nowhere"}, 2, `namespace "nowhere" not found`},
		{"unreachable API server", []string{"-kubeconfig", writeKubeconfig(t, "https://127.0.0.1:1")}, 1, "cannot reach the API server at https://127.0.0.1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runEDL(append([]string{"explain"}, c.args...)...)
			assert.Equal(t, c.code, code)
			assert.Empty(t, stdout)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.Len(t, lines, 1, "want exactly one line, got:\n%s", stderr)
			assert.True(t, strings.HasPrefix(lines[0], "edl explain: "), lines[0])
			assert.Contains(t, lines[0], c.want)
		})
	}
}

// TestExplainTakesTheControllersFlags: the plan's options come from the
// controller's flags, and the job may come before or after them.
func TestExplainTakesTheControllersFlags(t *testing.T) {
	opts, err := parseExplainFlags([]string{"-n", "team", "mnist", "-max_load_desired", "0.8", "-cooldown_cycles", "2", "-o", "json", "-dry_run"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "team", opts.namespace)
	assert.Equal(t, "mnist", opts.job)
	assert.Equal(t, "json", opts.output)
	assert.Equal(t, 0.8, opts.maxLoadDesired)
	assert.Equal(t, 2, opts.cooldownCycles)
	assert.True(t, opts.dryRun)

	code, stdout, _ := runEDL("explain", "-help")
	assert.Equal(t, 0, code)
	for _, want := range []string{"-n ", "-o ", "-max_load_desired", "-cooldown_cycles", "-config", "the options the running controller published on its Lease"} {
		assert.Contains(t, stdout, want)
	}
}
