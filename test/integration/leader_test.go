package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/paddlepaddle/edl/test/framework"
)

// edlProc is one run of the built edl binary whose HTTP server listens on a
// free port of the loopback interface.
type edlProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *framework.SyncBuffer
	done   chan struct{}
	err    error // how the process ended, once done is closed
}

var (
	servingLine  = regexp.MustCompile(`msg="serving metrics and health checks" addr=(\S+)`)
	electionLine = regexp.MustCompile(`msg="waiting for the leader lease" lease=\S+ identity=(\S+)`)
)

// startEDLProc runs edl with args and -http_addr 127.0.0.1:0; the test's end
// kills it if it still runs.
func startEDLProc(t *testing.T, args ...string) *edlProc {
	t.Helper()
	p := &edlProc{t: t, stderr: &framework.SyncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(edlBinary(t), append(args, "-http_addr", "127.0.0.1:0")...)
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("edl (pid %d) logged:\n%s", p.cmd.Process.Pid, p.stderr.String())
		}
	})
	return p
}

func (p *edlProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logged waits until the log matches re and returns its first group.
func (p *edlProc) logged(re *regexp.Regexp) string {
	p.t.Helper()
	var m []string
	err := wait.PollUntilContextTimeout(testContext(p.t), 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		m = re.FindStringSubmatch(p.stderr.String())
		return m != nil || p.exited(), nil
	})
	require.NoError(p.t, err, "edl never logged %s", re)
	require.NotNil(p.t, m, "edl exited (%v) before it logged %s", p.err, re)
	return m[1]
}

// identity is the replica's name in the lease.
func (p *edlProc) identity() string { return p.logged(electionLine) }

// get fetches a path of the replica's HTTP server.
func (p *edlProc) get(path string) (int, string) {
	p.t.Helper()
	resp, err := http.Get("http://" + p.logged(servingLine) + path)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	return resp.StatusCode, string(body)
}

// metric returns the value of one series of /metrics, written as it is
// exposed (name{labels}); 0 when absent.
func (p *edlProc) metric(series string) float64 {
	p.t.Helper()
	code, body := p.get("/metrics")
	require.Equal(p.t, http.StatusOK, code)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(p.t, err, line)
			return f
		}
	}
	return 0
}

// waitFor polls cond until it holds.
func (p *edlProc) waitFor(what string, cond func() bool) {
	p.t.Helper()
	err := wait.PollUntilContextTimeout(testContext(p.t), 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	require.NoError(p.t, err, "never: %s", what)
}

// stop sends SIGTERM and waits for the exit.
func (p *edlProc) stop() error {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	return p.wait()
}

// wait waits for the process to exit by itself.
func (p *edlProc) wait() error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(waitTimeout):
		p.t.Fatalf("edl did not exit; it logged:\n%s", p.stderr.String())
		return nil
	}
}

// lastLine is the last line the process wrote to stderr.
func (p *edlProc) lastLine() string {
	lines := strings.Split(strings.TrimRight(p.stderr.String(), "\n"), "\n")
	return lines[len(lines)-1]
}

func leaseOf(t *testing.T, ns string) *coordinationv1.Lease {
	t.Helper()
	lease, err := cp.Client.CoordinationV1().Leases(ns).Get(testContext(t), "edl-controller", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return lease
}

func holderOf(t *testing.T, ns string) string {
	if lease := leaseOf(t, ns); lease != nil {
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	return ""
}

// TestLeaderElectionOnTheAPIServer runs two replicas of the edl binary with
// a Lease in the test's namespace: the standby is ready but does not lead;
// SIGTERM on the leader hands over (the time is logged, not asserted); and a
// leader whose lease someone else takes exits 1 with one line.
func TestLeaderElectionOnTheAPIServer(t *testing.T) {
	installCRD(t)
	ns := newNamespace(t)
	args := []string{"-kubeconfig", cp.Kubeconfig, "-log_level", "info", "-leader_elect_namespace", ns,
		"-leader_elect_lease_duration", "6s", "-leader_elect_renew_deadline", "4s", "-leader_elect_retry_period", "1s"}
	a, b := startEDLProc(t, args...), startEDLProc(t, args...)
	ids := map[string]*edlProc{a.identity(): a, b.identity(): b}
	require.Len(t, ids, 2, "every replica has its own identity")

	var leader, standby *edlProc
	a.waitFor("a replica holds the lease", func() bool {
		leader = ids[holderOf(t, ns)]
		return leader != nil
	})
	standby = map[*edlProc]*edlProc{a: b, b: a}[leader]
	leader.waitFor("the leader reports edl_leader 1", func() bool { return leader.metric("edl_leader") == 1 })
	standby.logged(regexp.MustCompile(`msg="another replica leads" lease=\S+ leader=(` + regexp.QuoteMeta(leader.identity()) + `)`))
	assert.Equal(t, 0.0, standby.metric("edl_leader"))
	assert.NotContains(t, standby.stderr.String(), "starting the TrainingJob controller", "a standby does no work")
	for _, p := range []*edlProc{leader, standby} {
		p.waitFor("ready once the informers synced, leader or not", func() bool {
			code, _ := p.get("/readyz")
			return code == http.StatusOK
		})
		code, body := p.get("/healthz")
		assert.Equal(t, http.StatusOK, code, body)
	}

	// A clean shutdown: the leader stops its work, releases the lease and
	// exits 0; the standby takes over at its next retry.
	stopped := time.Now()
	require.NoError(t, leader.stop(), "SIGTERM exits 0")
	exited := time.Since(stopped)
	standby.waitFor("the standby takes the lease", func() bool { return holderOf(t, ns) == standby.identity() })
	handover := time.Since(stopped)
	t.Logf("handover on SIGTERM: the leader exited after %s, the standby held the lease after %s (retry period 1s, lease 6s)",
		exited.Round(10*time.Millisecond), handover.Round(10*time.Millisecond))
	assert.Contains(t, leader.stderr.String(), `msg="stopped leading" lease=`+ns+`/edl-controller`)
	assert.Regexp(t, `lvl=info msg=stopped$`, leader.lastLine(), "the last line of a clean exit")
	standby.waitFor("the new leader reports edl_leader 1", func() bool { return standby.metric("edl_leader") == 1 })
	assert.Contains(t, standby.stderr.String(), "starting the TrainingJob controller")

	// Someone else takes the lease: the leader cannot renew, stops and exits 1.
	lease := leaseOf(t, ns)
	require.NotNil(t, lease)
	now := metav1.NewMicroTime(time.Now())
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("usurper"), LeaseDurationSeconds: ptr.To(int32(3600)),
		AcquireTime: &now, RenewTime: &now}
	_, err := cp.Client.CoordinationV1().Leases(ns).Update(testContext(t), lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	err = standby.wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a lost lease ends the process")
	assert.Equal(t, 1, exit.ExitCode())
	assert.Equal(t, fmt.Sprintf("edl: lost the leader lease %s/edl-controller; exiting so that a restart rejoins the election", ns), standby.lastLine())
	assert.Equal(t, "usurper", holderOf(t, ns), "a replica that lost the lease does not release someone else's")
}
