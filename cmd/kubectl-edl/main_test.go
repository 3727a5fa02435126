package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func runPlugin(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
	return code, stdout.String(), stderr.String()
}

func writeKubeconfig(t *testing.T, url, namespace string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+url+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx-x, context: {cluster: c, user: u, namespace: `+namespace+`}}, {name: ctx-y, context: {cluster: c, user: u, namespace: nowhere}}]
current-context: ctx-x
`), 0o600))
	return path
}

// stubServer answers the discovery edl needs and says every namespace but
// "team" does not exist.
func stubServer(t *testing.T, servesTrainingJobs bool) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
		case r.URL.Path == "/apis/paddlepaddle.org/v1" && servesTrainingJobs:
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"paddlepaddle.org/v1","resources":[{"name":"trainingjobs","namespaced":true,"kind":"TrainingJob","verbs":["get","list","watch","patch"]}]}`))
		case strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") && r.URL.Path != "/api/v1/namespaces/team":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(server.Close)
	return server.URL
}

// TestBadInvocationsGiveOneLine: a wrong command line, a namespace that
// does not exist or a cluster without EDL is one line: exit 2 for the
// user's mistakes, 1 for the cluster's.
func TestBadInvocationsGiveOneLine(t *testing.T) {
	stub := writeKubeconfig(t, stubServer(t, true), "team")
	noEDL := writeKubeconfig(t, stubServer(t, false), "team")
	unreachable := writeKubeconfig(t, "https://127.0.0.1:1", "team")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"explain", "--nope"}, 2, "unknown flag: --nope"},
		{"unknown command", []string{"grow"}, 2, `unknown command "grow"`},
		{"two jobs", []string{"explain", "a", "b", "--kubeconfig", stub}, 2, `unexpected argument "b": name at most one job`},
		{"a job and -A", []string{"explain", "a", "-A", "--kubeconfig", stub}, 2, "a JOB and -A"},
		{"bad output", []string{"queue", "-o", "xml", "--kubeconfig", stub}, 2, `unknown output format "xml": use wide, json, yaml, name, jsonpath=... or go-template=...`},
		{"bad jsonpath", []string{"queue", "-o", "jsonpath={.jobs[", "--kubeconfig", stub}, 2, "invalid -o jsonpath"},
		{"queue takes no job", []string{"queue", "a", "--kubeconfig", stub}, 2, `unknown command "a"`},
		{"suspend without a job", []string{"suspend", "--kubeconfig", stub}, 2, "name one job"},
		{"unknown namespace", []string{"explain", "-n", "nowhere", "--kubeconfig", stub}, 2, `namespace "nowhere" not found`},
		{"the context's namespace", []string{"queue", "--context", "ctx-y", "--kubeconfig", stub}, 2, `namespace "nowhere" not found`},
		{"no EDL", []string{"queue", "--kubeconfig", noEDL}, 1, "does not serve paddlepaddle.org/v1 TrainingJobs: is EDL installed (kubectl apply -k)?"},
		{"unreachable", []string{"explain", "--kubeconfig", unreachable}, 1, "cannot reach the API server at https://127.0.0.1:1"},
		{"unknown context", []string{"queue", "--context", "ctx-z", "--kubeconfig", stub}, 2, "context was not found for specified context: ctx-z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runPlugin(c.args...)
			assert.Equal(t, c.code, code, stderr)
			assert.Empty(t, stdout)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.Len(t, lines, 1, "want exactly one line, got:\n%s", stderr)
			assert.True(t, strings.HasPrefix(lines[0], "kubectl edl: "), lines[0])
			assert.Contains(t, lines[0], c.want)
		})
	}
}

func TestHelpListsTheCommandsAndKubectlsFlags(t *testing.T) {
	code, stdout, _ := runPlugin("--help")
	assert.Equal(t, 0, code)
	for _, want := range []string{"explain", "queue", "suspend", "resume", "--context", "--namespace", "--kubeconfig", "--controller-namespace"} {
		assert.Contains(t, stdout, want)
	}
	code, stdout, _ = runPlugin("explain", "--help")
	assert.Equal(t, 0, code)
	for _, want := range []string{"-A, --all-namespaces", "-o, --output", "published on its Lease"} {
		assert.Contains(t, stdout, want)
	}
}

func TestVersionClientOnly(t *testing.T) {
	code, stdout, stderr := runPlugin("version", "--client")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "kubectl-edl  "+version+"\n", stdout)
}

// TestOIDCKubeconfigsWork: a kubeconfig whose user authenticates with
// kubectl's OIDC auth provider works: the plugin sends its ID token.
func TestOIDCKubeconfigsWork(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	token := b64([]byte(`{"alg":"none"}`)) + "." + b64(fmt.Appendf(nil, `{"exp":%d}`, time.Now().Add(time.Hour).Unix())) + ".sig"
	var sent atomic.Value
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Store(r.Header.Get("Authorization"))
		http.NotFound(w, r)
	}))
	t.Cleanup(server.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server.URL+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {auth-provider: {name: oidc, config: {idp-issuer-url: "https://issuer.example.com", client-id: edl, id-token: "`+token+`"}}}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team}}]
current-context: x
`), 0o600))
	_, _, stderr := runPlugin("queue", "--kubeconfig", path)
	assert.NotContains(t, stderr, "no Auth Provider found")
	assert.Equal(t, "Bearer "+token, sent.Load(), stderr)
}
