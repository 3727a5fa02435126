package integration

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
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

// TestLeaderElectionOnTheAPIServer runs two replicas of the edl binary with
// a Lease in the test's namespace: the standby is ready but does not lead;
// SIGTERM on the leader hands over (the time is logged, not asserted); and a
// leader whose lease someone else takes exits 1 with one line.
func TestLeaderElectionOnTheAPIServer(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	args := []string{"-kubeconfig", cp.Kubeconfig, "-log_level", "info", "-leader_elect_namespace", ns,
		"-leader_elect_lease_duration", "6s", "-leader_elect_renew_deadline", "4s", "-leader_elect_retry_period", "1s"}
	holder := func() string { return leaseHolder(testContext(t), cp, ns) }
	a, b := startEDLProc(t, args...), startEDLProc(t, args...)
	ids := map[string]*edlProc{a.waitIdentity(): a, b.waitIdentity(): b}
	require.Len(t, ids, 2, "every replica has its own identity")

	var leader, standby *edlProc
	a.waitFor("a replica holds the lease", func() bool {
		leader = ids[holder()]
		return leader != nil
	})
	standby = map[*edlProc]*edlProc{a: b, b: a}[leader]
	leader.waitFor("the leader reports edl_leader 1", func() bool { return leader.metric("edl_leader") == 1 })
	standby.logged(regexp.MustCompile(`msg="another replica leads" lease=\S+ leader=(` + regexp.QuoteMeta(leader.waitIdentity()) + `)`))
	assert.Equal(t, 0.0, standby.metric("edl_leader"))
	assert.NotContains(t, standby.Log(), "starting the TrainingJob controller", "a standby does no work")
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
	standby.waitFor("the standby takes the lease", func() bool { return holder() == standby.waitIdentity() })
	handover := time.Since(stopped)
	t.Logf("handover on SIGTERM: the leader exited after %s, the standby held the lease after %s (retry period 1s, lease 6s)",
		exited.Round(10*time.Millisecond), handover.Round(10*time.Millisecond))
	assert.Contains(t, leader.Log(), `msg="stopped leading" lease=`+ns+`/edl-controller`)
	assert.Regexp(t, `lvl=info msg=stopped$`, leader.LastLine(), "the last line of a clean exit")
	standby.waitFor("the new leader reports edl_leader 1", func() bool { return standby.metric("edl_leader") == 1 })
	assert.Contains(t, standby.Log(), "starting the TrainingJob controller")

	// Someone else takes the lease: the leader cannot renew, stops and exits 1.
	lease, err := cp.Client.CoordinationV1().Leases(ns).Get(testContext(t), leaderLeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	now := metav1.NewMicroTime(time.Now())
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("usurper"), LeaseDurationSeconds: ptr.To(int32(3600)),
		AcquireTime: &now, RenewTime: &now}
	_, err = cp.Client.CoordinationV1().Leases(ns).Update(testContext(t), lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	err = standby.wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a lost lease ends the process")
	assert.Equal(t, 1, exit.ExitCode())
	assert.Equal(t, fmt.Sprintf("edl: lost the leader lease %s/edl-controller; exiting so that a restart rejoins the election", ns), standby.LastLine())
	assert.Equal(t, "usurper", holder(), "a replica that lost the lease does not release someone else's")
}

// TestLeaderFailover runs two replicas of the edl binary with edl's default
// lease timings. SIGKILL on the leader: the standby takes the lease once it
// expires and does the work. SIGTERM on the new leader: it stops its work,
// releases the lease and exits 0, and a restarted replica takes over at its
// next retry. The failover after SIGKILL must take at most 20 s and the
// handover after SIGTERM at most 5 s, the bounds the defaults are chosen
// for (docs/operations.md); the measured times are logged.
func TestLeaderFailover(t *testing.T) {
	const jobsNS = "training"
	began := time.Now()
	ctx, plane, tj := startFleetPlane(t, framework.NodeSpec{Name: "failover", CPU: "8", Memory: "32Gi", Count: 2}, 5*time.Minute, jobsNS)

	edl := newFleetElecting(t, plane)
	a, b := edl.start("a"), edl.start("b")

	// leaderOf waits until one of the runs holds the lease and the other has
	// joined the election, and returns them in that order.
	leaderOf := func(x, y *edlRun) (*edlRun, *edlRun) {
		t.Helper()
		var leader, standby *edlRun
		var holder string
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			xExited, xErr := x.Exited()
			yExited, yErr := y.Exited()
			require.False(t, xExited || yExited, "an edl replica exited: %v %v", xErr, yErr)
			holder = leaseHolder(ctx, plane, leaderLeaseNamespace)
			switch {
			case x.Identity() == "" || y.Identity() == "":
				return false, nil
			case holder == x.Identity():
				leader, standby = x, y
			case holder == y.Identity():
				leader, standby = y, x
			default:
				return false, nil
			}
			return true, nil
		})
		require.NoError(t, err, "neither %q nor %q leads; the lease is held by %q", x.Identity(), y.Identity(), holder)
		return leader, standby
	}
	// takeover waits until want holds the lease and returns how long that
	// took since from, and when the lease was first not held by old.
	takeover := func(old, want *edlRun, from time.Time) (time.Duration, time.Duration) {
		t.Helper()
		var released time.Duration
		var holder string
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			holder = leaseHolder(ctx, plane, leaderLeaseNamespace)
			if released == 0 && holder != old.Identity() {
				released = time.Since(from)
			}
			return holder == want.Identity(), nil
		})
		require.NoError(t, err, "replica %s (%s) never took the lease; it is held by %q; its last lines:\n%s",
			want.replica, want.Identity(), holder, want.Tail(10))
		return time.Since(from), released
	}

	before, err := tj.PaddlepaddleV1().TrainingJobs(jobsNS).Create(ctx, elasticJob(jobsNS, "before"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForReplicaSets(t, ctx, plane, tj, before)
	leader, standby := leaderOf(a, b)
	t.Logf("replica %s leads (%s), replica %s stands by", leader.replica, leader.Identity(), standby.replica)

	// SIGKILL: the lease runs out, the standby takes it.
	killed := time.Now()
	leader.Kill()
	failover, _ := takeover(leader, standby, killed)
	// client-go runs OnStartedLeading, which logs this, in a goroutine of
	// its own once the lease is written: the line may follow the lease.
	_, err = standby.WaitForLine(ctx, regexp.MustCompile(regexp.QuoteMeta(`msg="started leading" lease=paddlecloud/edl-controller`)), 10*time.Second)
	assert.NoError(t, err, "the new leader says it leads")
	afterKill, err := tj.PaddlepaddleV1().TrainingJobs(jobsNS).Create(ctx, elasticJob(jobsNS, "after-kill"), metav1.CreateOptions{})
	require.NoError(t, err)
	ranAfterKill := waitForReplicaSets(t, ctx, plane, tj, afterKill)

	// SIGTERM: the new leader stops, releases the lease and exits 0; the
	// restarted replica takes over.
	restarted := edl.start(leader.replica)
	newLeader, newStandby := leaderOf(standby, restarted)
	require.Same(t, standby, newLeader, "the restarted replica must not have taken a held lease")
	// The standby logs the leader once it has read the lease: from then on
	// it only waits for the lease to be free.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Contains(newStandby.Log(), `msg="another replica leads"`), nil
	})
	require.NoError(t, err, "the restarted replica never saw the leader; its last lines:\n%s", newStandby.Tail(10))
	terminated := time.Now()
	newLeader.Signal(syscall.SIGTERM)
	exited, err := newLeader.Wait(30 * time.Second)
	if !exited {
		t.Fatalf("the leader did not exit within 30s of SIGTERM; its last lines:\n%s", newLeader.Tail(10))
	}
	exitedAfter := time.Since(terminated)
	require.NoError(t, err, "edl must exit 0 on SIGTERM; its last lines:\n%s", newLeader.Tail(10))
	assert.NotEqual(t, newLeader.Identity(), leaseHolder(ctx, plane, leaderLeaseNamespace), "the lease is still held by the replica that exited: not released")
	out := newLeader.Log()
	assert.Contains(t, out, `msg="stopped leading" lease=paddlecloud/edl-controller`)
	assert.Contains(t, out, "lvl=info msg=stopped")
	handover, released := takeover(newLeader, newStandby, terminated)
	afterTerm, err := tj.PaddlepaddleV1().TrainingJobs(jobsNS).Create(ctx, elasticJob(jobsNS, "after-term"), metav1.CreateOptions{})
	require.NoError(t, err)
	ranAfterTerm := waitForReplicaSets(t, ctx, plane, tj, afterTerm)

	for _, r := range edl.all() {
		assert.NotContains(t, r.Log(), "panic", "replica %s", r.replica)
	}
	// With the defaults (lease 12 s, retry 1 s) client-go's worst cases are
	// 12 s + 2 × 2.2 s = 16.4 s after SIGKILL and 2.2 s after SIGTERM: the
	// standby counts the lease from when it saw the last renewal and retries
	// at intervals stretched by up to JitterFactor. The bounds leave room
	// for a loaded machine's API calls.
	const maxFailover, maxHandover = 20 * time.Second, 5 * time.Second
	assert.LessOrEqual(t, failover, maxFailover, "failover after SIGKILL")
	assert.LessOrEqual(t, handover, maxHandover, "handover after SIGTERM")
	t.Logf("failover after SIGKILL of the leader: %s (at most %s); a new job ran %s after that",
		failover.Round(10*time.Millisecond), maxFailover, ranAfterKill.Round(10*time.Millisecond))
	t.Logf("handover after SIGTERM of the leader: exited 0 after %s, lease released after %s, taken by the other replica after %s (at most %s); a new job ran %s after that",
		exitedAfter.Round(10*time.Millisecond), released.Round(10*time.Millisecond), handover.Round(10*time.Millisecond), maxHandover, ranAfterTerm.Round(10*time.Millisecond))
	t.Logf("test ran %s", time.Since(began).Round(time.Second))
}
