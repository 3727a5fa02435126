package scale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/framework"
)

var step = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// auditAt is one completed request in the audit log, at step+at.
func auditAt(at time.Duration, agent, verb, namespace, resource, sub string) string {
	return `{"stage":"ResponseComplete","verb":"` + verb + `","userAgent":"` + agent + `","objectRef":{"namespace":"` + namespace +
		`","resource":"` + resource + `","subresource":"` + sub + `"},"requestReceivedTimestamp":"` + step.Add(at).Format(time.RFC3339Nano) + `"}`
}

func TestReadTimeline(t *testing.T) {
	const sched, kcm = "kube-scheduler/v1.36.3 (linux/amd64)", "kube-controller-manager/v1.36.3 (linux/amd64)"
	log := strings.Join([]string{
		auditAt(-time.Second, sched, "delete", "scale-00", "pods", ""), // before the step
		auditAt(500*time.Millisecond, sched, "delete", "scale-00", "pods", ""),
		auditAt(700*time.Millisecond, sched, "delete", "scale-01", "pods", ""),
		auditAt(time.Second, kcm, "create", "scale-00", "pods", ""),
		auditAt(2*time.Second, sched, "create", "web", "pods", "binding"),
		auditAt(3*time.Second, kcm, "delete", "scale-00", "pods", ""),
		auditAt(4*time.Second, sched, "create", "scale-00", "pods", "binding"),
		auditAt(5*time.Second, "kubectl/v1.36.3", "delete", "scale-00", "pods", ""), // someone else
		auditAt(time.Minute, sched, "create", "web", "pods", "binding"),             // after the window
	}, "\n")
	got, err := readTimeline(strings.NewReader(log), [][2]time.Time{{step, step.Add(30 * time.Second)}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	want := []Span{
		{What: "scheduler: job pods preempted (deleted)", N: 2, First: 500 * time.Millisecond, Last: 700 * time.Millisecond},
		{What: "scheduler: web pods bound", N: 1, First: 2 * time.Second, Last: 2 * time.Second},
		{What: "ReplicaSet controller: job pods created", N: 1, First: time.Second, Last: time.Second},
		{What: "ReplicaSet controller: job pods deleted", N: 1, First: 3 * time.Second, Last: 3 * time.Second},
		{What: "scheduler: job pods bound", N: 1, First: 4 * time.Second, Last: 4 * time.Second},
	}
	assert.Equal(t, want, got[0])
}

func TestReadScalings(t *testing.T) {
	at := func(d time.Duration) string { return step.Add(d).Format(edlTimeFormat) }
	log := strings.Join([]string{
		"t=" + at(5*time.Second) + ` lvl=info msg="scaled trainers" job=scale-00/job-000 from=10 to=6 reason="yield to pending pods"`,
		"t=" + at(10*time.Second) + ` lvl=info msg="scaled trainers" job=scale-01/job-001 from=8 to=7 reason="yield"`,
		"t=" + at(30*time.Second) + ` lvl=info msg="scaled trainers" job=scale-02/job-002 from=3 to=5 reason="grow"`,
		"t=" + at(40*time.Second) + ` lvl=info msg="planned" jobs=50`,
		"t=" + at(2*time.Minute) + ` lvl=info msg="scaled trainers" job=scale-02/job-002 from=5 to=9 reason="grow"`,
	}, "\n")
	path := filepath.Join(t.TempDir(), "edl.log")
	require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
	got, err := ReadScalings(path, [][2]time.Time{{step, step.Add(time.Minute)}})
	require.NoError(t, err)
	assert.Equal(t, [][2]Span{{
		{What: "edl: trainers removed (scale-downs)", N: 5, First: 5 * time.Second, Last: 10 * time.Second},
		{What: "edl: trainers added (scale-ups)", N: 2, First: 30 * time.Second, Last: 30 * time.Second},
	}}, got)
}

func TestCountStatusWrites(t *testing.T) {
	write := func(verb, name string, at time.Duration) framework.AuditEvent {
		return framework.AuditEvent{Verb: verb, UserAgent: "edl/v1", Received: step.Add(at),
			ObjectRef: &framework.ObjectRef{Namespace: "scale-00", Name: name, Resource: "trainingjobs", Subresource: "status"}}
	}
	events := []framework.AuditEvent{
		write("update", "a", 0), write("update", "a", 10*time.Second), write("patch", "a", 50*time.Second),
		write("update", "a", 70*time.Second), // a's busiest minute holds 3 writes
		write("update", "b", 5*time.Second),
		write("update", "b", 3*time.Minute), // after the window
	}
	got := CountStatusWrites(events, step, step.Add(2*time.Minute), 2)
	assert.Equal(t, StatusWrites{Updates: 4, Patches: 1, PerJobMinute: 1.25, Peak: 3}, got)
}
