package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
)

// auditPolicy logs every request's metadata — verb, resource, user agent,
// time — once its response is complete (for a watch: once it started).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// quietWindow is how long the steady state is watched.
const quietWindow = 35 * time.Second

// TestSteadyStateSendsNoListAndNoWrite runs the edl binary on a control plane
// of its own whose kube-apiserver keeps an audit log (kube-apiserver's
// request metrics have no user agent; its audit events do), lets an elastic
// job grow to its plan's target, waits until edl has written nothing for
// 10 s, and then reads every request edl's client sent during a window of
// 35 s: there must be no LIST and no write — edl reads from its informers,
// which only watch, and writes only what changed. The renewals of the leader
// lease, sent by edl's leader-election client under a user agent of its
// own, are counted apart: they are how a standby knows the leader lives.
func TestSteadyStateSendsNoListAndNoWrite(t *testing.T) {
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	require.NoError(t, os.WriteFile(policy, []byte(auditPolicy), 0o600))
	ctx, plane, tj := startFleetPlaneWith(t, framework.Options{
		Nodes:          []framework.NodeSpec{{Name: "node", CPU: "4", Memory: "16Gi", Count: 2}},
		APIServerFlags: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog},
	}, 5*time.Minute, "quiet")
	edl := framework.StartEDLForTest(t, framework.EDLOptions{Args: []string{
		"-kubeconfig", plane.Kubeconfig, "-http_addr", "127.0.0.1:0", "-autoscale_interval", "2s"}})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edl logged:\n%s", edl.Log())
		}
	})

	job := elasticJob("quiet", "steady")
	_, err := tj.PaddlepaddleV1().TrainingJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	// Eight trainers of 500m and a pserver fit the two nodes: the plan's
	// target is the job's max-instance.
	var last string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := tj.PaddlepaddleV1().TrainingJobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := plane.Client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: v1.LabelTrainer + "=" + job.Name})
		if err != nil {
			return false, nil
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		last = fmt.Sprintf("phase %s, %d trainers running", got.Status.Phase, running)
		return got.Status.Phase == v1.PhaseRunning && running == int(job.Spec.Trainer.MaxInstance), nil
	})
	require.NoError(t, err, "the job never ran its %d trainers: %s", job.Spec.Trainer.MaxInstance, last)

	// Quiet: no write by edl's client for 10 s.
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		requests, err := edlRequests(auditLog, time.Time{}, time.Now())
		if err != nil {
			return false, err
		}
		var lastWrite time.Time
		for _, r := range requests {
			if r.write() && !r.leaderElection() && r.Received.After(lastWrite) {
				lastWrite, last = r.Received, r.Verb+" "+r.resource()
			}
		}
		return time.Since(lastWrite) > 10*time.Second, nil
	})
	require.NoError(t, err, "edl kept writing; the last: %s", last)

	start := time.Now()
	time.Sleep(quietWindow)
	end := time.Now()
	requests, err := edlRequests(auditLog, start, end)
	require.NoError(t, err)
	counts := map[string]int{}
	var offending []string
	for _, r := range requests {
		key := r.Verb + " " + r.resource()
		if r.leaderElection() {
			key += " (leader election)"
		} else if r.Verb == "list" || r.write() {
			offending = append(offending, key)
		}
		counts[key]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %d requests in %s", k, counts[k], end.Sub(start).Round(time.Second))
	}
	assert.Empty(t, offending, "edl sent a LIST or a write while nothing changed")
	assert.Positive(t, counts["update leases (leader election)"]+counts["get leases (leader election)"],
		"the audit log holds edl's requests (its lease renewals at least)")
}

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

func (e auditEvent) resource() string {
	if e.ObjectRef == nil {
		return "-"
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

func (e auditEvent) write() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func (e auditEvent) leaderElection() bool { return strings.Contains(e.UserAgent, "(leader-election)") }

// edlRequests reads the requests that edl (user agent edl/<version>) sent
// between from and to, one per request: a watch's first stage, every other
// request's last.
func edlRequests(path string, from, to time.Time) ([]auditEvent, error) {
	f, err := os.Open(path) // #nosec G304 -- the test's own audit log
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []auditEvent
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line %q: %w", scanner.Text(), err)
		}
		if !strings.HasPrefix(e.UserAgent, "edl/") || e.Received.Before(from) || e.Received.After(to) {
			continue
		}
		if (e.Verb == "watch" && e.Stage == "ResponseStarted") || (e.Verb != "watch" && e.Stage == "ResponseComplete") {
			out = append(out, e)
		}
	}
	return out, scanner.Err()
}
