package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// TestEDLBinaryOutOfCluster runs the built edl binary the way a user does
// from a workstation, with -kubeconfig, drives a job to Running with it, and
// stops it with SIGTERM. It elects itself leader with a Lease in the test's
// namespace, and serves HTTP on a free port.
func TestEDLBinaryOutOfCluster(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	edl := startEDLProc(t, "-kubeconfig", cp.Kubeconfig, "-log_level", "debug", "-leader_elect_namespace", ns)

	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	require.NoError(t, edl.Stop(30*time.Second), "edl must exit 0 on SIGTERM")
	out := edl.Log()
	assert.Regexp(t, `(?m)^t=\S+ lvl=info msg="connected to the API server" host=https://127\.0\.0\.1:\d+`, out)
	// Queued, the job's ReplicaSets are created at 0; admission scales them to the minimum.
	assert.Contains(t, out, `msg="created ReplicaSet" job=`+ns+`/example replicaset=example-trainer replicas=0`)
	assert.Contains(t, out, `msg="scaled ReplicaSet" job=`+ns+`/example replicaset=example-trainer from=0 to=2 reason="the job starts"`)
	assert.Contains(t, out, `msg="started leading" lease=`+ns+`/edl-controller`)
	assert.Contains(t, out, `lvl=info msg=stopped`)
	assert.NotContains(t, out, "panic")
}
