package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
)

var (
	edlOnce sync.Once
	edlPath string
	edlErr  error
)

// edlBinary builds cmd/edl once for the package, the way `make build` does.
func edlBinary(t *testing.T) string {
	t.Helper()
	edlOnce.Do(func() {
		root, err := framework.ModuleRoot()
		if err != nil {
			edlErr = err
			return
		}
		dir, err := os.MkdirTemp("", "edl-bin-")
		if err != nil {
			edlErr = err
			return
		}
		edlPath = filepath.Join(dir, "edl")
		cmd := exec.Command("go", "build", "-trimpath", "-o", edlPath, "./cmd/edl")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			edlErr = err
			edlPath = string(out)
		}
	})
	require.NoError(t, edlErr, "build cmd/edl: %s", edlPath)
	return edlPath
}

// TestEDLBinaryOutOfCluster runs the built edl binary the way a user does
// from a workstation, with -kubeconfig, drives a job to Running with it, and
// stops it with SIGTERM. It elects itself leader with a Lease in the test's
// namespace, and serves HTTP on a free port.
func TestEDLBinaryOutOfCluster(t *testing.T) {
	installCRD(t)
	ns := newNamespace(t)
	var stderr framework.SyncBuffer
	cmd := exec.Command(edlBinary(t), "-kubeconfig", cp.Kubeconfig, "-log_level", "debug",
		"-leader_elect_namespace", ns, "-http_addr", "127.0.0.1:0")
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})

	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "edl must exit 0 on SIGTERM; stderr:\n%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("edl did not stop within 30s of SIGTERM; stderr:\n%s", stderr.String())
	}
	out := stderr.String()
	assert.Regexp(t, `(?m)^t=\S+ lvl=info msg="connected to the API server" host=https://127\.0\.0\.1:\d+`, out)
	assert.Contains(t, out, `msg="created ReplicaSet" job=`+ns+`/example replicaset=example-trainer replicas=2`)
	assert.Contains(t, out, `msg="started leading" lease=`+ns+`/edl-controller`)
	assert.Contains(t, out, `lvl=info msg=stopped`)
	assert.NotContains(t, out, "panic")
}
