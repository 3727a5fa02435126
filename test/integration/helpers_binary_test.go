package integration

// The helpers that run the built edl binary: one replica on the shared
// control plane (edlProc), or a fleet of replicas on a control plane of the
// test's own (fleet), with the jobs such a plane runs.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// edlBinary is framework.BuildEDL's edl binary.
func edlBinary(t *testing.T) string {
	t.Helper()
	bin, err := framework.BuildEDL()
	require.NoError(t, err)
	return bin
}

// edlProc is a run of the built edl binary in a test, its HTTP server on a
// free port of the loopback interface.
type edlProc struct {
	*framework.EDL
	t *testing.T
}

// startEDLProc runs edl with args and -http_addr 127.0.0.1:0 until the test
// ends. A failed test logs what it logged.
func startEDLProc(t *testing.T, args ...string) *edlProc {
	t.Helper()
	e := framework.StartEDLForTest(t, framework.EDLOptions{Args: append(args, "-http_addr", "127.0.0.1:0")})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edl (pid %d) logged:\n%s", e.Pid(), e.Log())
		}
	})
	return &edlProc{EDL: e, t: t}
}

// logged waits until the log matches re and returns its first group.
func (p *edlProc) logged(re *regexp.Regexp) string {
	p.t.Helper()
	m, err := p.WaitForLine(testContext(p.t), re, waitTimeout)
	require.NoError(p.t, err)
	return m[1]
}

// waitIdentity waits until the replica has joined the election and
// returns its name in the lease.
func (p *edlProc) waitIdentity() string { return p.logged(framework.EDLIdentityLine) }

// get fetches a path of the replica's HTTP server.
func (p *edlProc) get(path string) (int, string) {
	p.t.Helper()
	resp, err := http.Get("http://" + p.logged(framework.EDLServingLine) + path)
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
func (p *edlProc) stop() error { return p.Stop(waitTimeout) }

// wait waits for the process to exit by itself.
func (p *edlProc) wait() error {
	p.t.Helper()
	exited, err := p.Wait(waitTimeout)
	if !exited {
		p.t.Fatalf("edl did not exit; it logged:\n%s", p.Log())
	}
	return err
}

// The leader election a fleet runs edl with: short, so that a failover takes
// seconds, and the defaults' proportions.
const (
	leaderLeaseNamespace = "paddlecloud" // edl's default -leader_elect_namespace
	leaderLeaseName      = "edl-controller"
	fleetLeaseDuration   = 4 * time.Second
	fleetRenewDeadline   = 3 * time.Second
	fleetRetryPeriod     = 500 * time.Millisecond
)

// leaseHolder reads the holder of edl's leader Lease in ns; empty when
// nobody holds it or it does not exist yet.
func leaseHolder(ctx context.Context, plane *framework.ControlPlane, ns string) string {
	lease, err := plane.Client.CoordinationV1().Leases(ns).Get(ctx, leaderLeaseName, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// edlRun is one run of a fleet's replica. A replica is a sequence of runs: a
// killed run is followed by a fresh process with a fresh lease identity.
type edlRun struct {
	*framework.EDL
	replica string
}

// fleet starts replicas of the built edl binary out of cluster against a
// control plane of the test's own, and keeps every run: at the end of the
// test it kills what still runs, and when the test failed it logs how each
// run ended.
type fleet struct {
	t    *testing.T
	args []string

	mu   sync.Mutex
	runs []*edlRun
}

func newFleet(t *testing.T, plane *framework.ControlPlane, flags ...string) *fleet {
	t.Helper()
	return newFleetElecting(t, plane, append(flags,
		"-leader_elect_lease_duration", fleetLeaseDuration.String(),
		"-leader_elect_renew_deadline", fleetRenewDeadline.String(),
		"-leader_elect_retry_period", fleetRetryPeriod.String(),
	)...)
}

// newFleetElecting starts a fleet whose replicas elect their leader with
// the timings in flags, or edl's defaults where flags set none.
func newFleetElecting(t *testing.T, plane *framework.ControlPlane, flags ...string) *fleet {
	t.Helper()
	f := &fleet{t: t, args: append(flags,
		"-kubeconfig", plane.Kubeconfig,
		"-http_addr", "",
		"-autoscale_interval", "1s",
		"-log_level", "info",
	)}
	// Registered after the control plane's cleanup, so it runs before it.
	t.Cleanup(func() {
		runs := f.all()
		for _, r := range runs {
			r.Kill()
		}
		if !t.Failed() {
			return
		}
		// The last runs, and any that ended on its own, explain a failure.
		for i, r := range runs {
			if i >= len(runs)-4 || r.ExitedUnasked() {
				_, err := r.Exited()
				t.Logf("edl run %d of %d (replica %s, identity %s) ended with %v; its last lines:\n%s", i+1, len(runs), r.replica, r.Identity(), err, r.Tail(20))
			}
		}
	})
	return f
}

// start runs a new edl process for replica.
func (f *fleet) start(replica string) *edlRun {
	f.t.Helper()
	e, err := framework.StartEDL(framework.EDLOptions{Args: f.args})
	require.NoError(f.t, err)
	r := &edlRun{EDL: e, replica: replica}
	f.mu.Lock()
	f.runs = append(f.runs, r)
	f.mu.Unlock()
	return r
}

// all returns every run so far.
func (f *fleet) all() []*edlRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*edlRun(nil), f.runs...)
}

// startFleetPlane starts a control plane of the test's own for a fleet: the
// nodes, the CRD, the namespaces paddlecloud (for the lease) and extra, and
// the PriorityClasses "training" (100) for the jobs and "load" (1000) for
// what preempts them. The context it returns ends after timeout.
func startFleetPlane(t *testing.T, nodes framework.NodeSpec, timeout time.Duration, extra ...string) (context.Context, *framework.ControlPlane, tjclient.Interface) {
	t.Helper()
	return startFleetPlaneWith(t, framework.Options{Nodes: []framework.NodeSpec{nodes}}, timeout, extra...)
}

// startFleetPlaneWith is startFleetPlane with the control plane's options.
func startFleetPlaneWith(t *testing.T, opts framework.Options, timeout time.Duration, extra ...string) (context.Context, *framework.ControlPlane, tjclient.Interface) {
	t.Helper()
	plane := framework.StartForTest(t, opts)
	require.NoError(t, applyCRD(plane))
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	tj, err := tjclient.NewForConfig(plane.Config)
	require.NoError(t, err)
	for _, name := range append([]string{leaderLeaseNamespace}, extra...) {
		_, err := plane.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for name, value := range map[string]int32{"training": 100, "load": 1000} {
		_, err := plane.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return ctx, plane, tj
}

// elasticJob is a plain job of 500m trainers, min 1 max 8, and one 100m
// pserver, at the PriorityClass "training".
func elasticJob(ns, name string) *v1.TrainingJob {
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			PriorityClassName: "training",
			Trainer:           v1.TrainerSpec{MinInstance: 1, MaxInstance: 8, Resources: requests("500m", "256Mi")},
			Pserver:           v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: requests("100m", "64Mi")},
		},
	}
}

// waitForReplicaSets waits until the job is Running with a trainer and a
// pserver ReplicaSet that it controls, and returns how long that took.
func waitForReplicaSets(t *testing.T, ctx context.Context, plane *framework.ControlPlane, tj tjclient.Interface, job *v1.TrainingJob) time.Duration {
	t.Helper()
	began := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := tj.PaddlepaddleV1().TrainingJobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, role := range []v1.Role{v1.RoleTrainer, v1.RolePserver} {
			rs, err := plane.Client.AppsV1().ReplicaSets(job.Namespace).Get(ctx, v1.ReplicaSetName(job.Name, role), metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != got.UID {
				last = fmt.Sprintf("ReplicaSet %s is not controlled by job %s (%s)", rs.Name, got.Name, got.UID)
				return false, nil
			}
		}
		last = fmt.Sprintf("phase %q: %s", got.Status.Phase, got.Status.Message)
		return got.Status.Phase == v1.PhaseRunning, nil
	})
	require.NoError(t, err, "job %s never got its ReplicaSets and ran: %s", job.Name, last)
	return time.Since(began)
}
