package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

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
// While the job started, its status updates must have come no faster than
// one per autoscale interval, but for the few that mark an edge.
func TestSteadyStateSendsNoListAndNoWrite(t *testing.T) {
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	require.NoError(t, os.WriteFile(policy, []byte(framework.AuditPolicy), 0o600))
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
	versions := watchStatuses(ctx, t, tj, job.Namespace)
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
		requests, err := framework.EDLRequests(auditLog, time.Time{}, time.Now())
		if err != nil {
			return false, err
		}
		var lastWrite time.Time
		for _, r := range requests {
			if r.Write() && !r.LeaderElection() && r.Received.After(lastWrite) {
				lastWrite, last = r.Received, r.Verb+" "+r.Resource()
			}
		}
		return time.Since(lastWrite) > 10*time.Second, nil
	})
	require.NoError(t, err, "edl kept writing; the last: %s", last)

	// While the job started, its count changes were paced: at most one
	// status update per -autoscale_interval, but for the few edges (queued,
	// admitted, running) that are written at once.
	requests, err := framework.EDLRequests(auditLog, time.Time{}, time.Now())
	require.NoError(t, err)
	updates, quick, refused := statusUpdates(requests, 2*time.Second)
	t.Logf("edl's status updates while the job started: %d, %d of them within half an interval of the one before; %d more refused", len(updates), quick, refused)
	if !assert.LessOrEqual(t, quick, maxEdgeUpdates, "status updates came faster than one per interval: %v", updates) {
		t.Logf("the job's status as a watch saw it:\n%s", versions())
	}

	start := time.Now()
	time.Sleep(quietWindow)
	end := time.Now()
	requests, err = framework.EDLRequests(auditLog, start, end)
	require.NoError(t, err)
	counts := map[string]int{}
	var offending []string
	for _, r := range requests {
		key := r.Verb + " " + r.Resource()
		if r.LeaderElection() {
			key += " (leader election)"
		} else if r.Verb == "list" || r.Write() {
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

// watchStatuses watches the TrainingJobs of namespace and returns what each
// version's status said, one line each, for a failure's log.
func watchStatuses(ctx context.Context, t *testing.T, tj tjclient.Interface, namespace string) func() string {
	t.Helper()
	w, err := tj.PaddlepaddleV1().TrainingJobs(namespace).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var (
		mu    sync.Mutex
		lines []string
	)
	go func() {
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*v1.TrainingJob)
			if !ok {
				continue
			}
			s := job.Status
			line := fmt.Sprintf("%s rv=%s phase=%s trainers=%d/%d/%d", time.Now().Format("15:04:05.000"), job.ResourceVersion,
				s.Phase, s.Trainers.Desired, s.Trainers.Current, s.Trainers.Ready)
			for _, c := range s.Conditions {
				line += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Reason)
			}
			if s.LastScale != nil {
				line += fmt.Sprintf(" lastScale=%d->%d", s.LastScale.From, s.LastScale.To)
			}
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
}

// maxEdgeUpdates is how many of a new job's status updates may follow the one
// before by less than half an interval: those that mark an edge (queued,
// admitted, pods starting, running), which are never paced.
const maxEdgeUpdates = 4

// statusUpdates are the times of edl's accepted updates of
// trainingjobs/status (the controller's, and the autoscaler's of the Queued
// condition), how many followed the one before by less than half of
// interval, and how many updates the API server refused.
func statusUpdates(requests []framework.AuditEvent, interval time.Duration) ([]time.Duration, int, int) {
	var times []time.Time
	refused := 0
	for _, r := range requests {
		if r.Verb != "update" || r.Resource() != "trainingjobs/status" || r.LeaderElection() {
			continue
		}
		// A refused update (a 409 when the autoscaler patched the status
		// since the controller's informer saw it) wrote nothing; the sync's
		// retry writes the same edge.
		if !r.Succeeded() {
			refused++
			continue
		}
		times = append(times, r.Received)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	var offsets []time.Duration
	quick := 0
	for i, at := range times {
		offsets = append(offsets, at.Sub(times[0]).Round(time.Millisecond))
		if i > 0 && at.Sub(times[i-1]) < interval/2 {
			quick++
		}
	}
	return offsets, quick, refused
}
