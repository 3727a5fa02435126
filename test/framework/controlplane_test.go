package framework

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A port found free can be taken before the component binds it (an outgoing
// connection of a parallel test did so in CI); Start then lays the control
// plane out again on other ports.
func TestStartMovesOffATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if calls == 1 && err == nil {
			ports[4] = takenPort // the scheduler's
		}
		return ports, err
	}
	defer func() { pickPorts = freePorts }()

	var log SyncBuffer
	cp := StartForTest(t, Options{Log: &log})
	assert.Equal(t, 2, calls, "one more layout after the clash")
	assert.Contains(t, log.String(), "kube-scheduler could not bind its port")
	assert.Contains(t, cp.LogTail(Scheduler, 1000), "address already in use", "the first run's log is kept")
	assert.NotContains(t, cp.components[3].lastRun(), "address already in use")

	// The control plane that started is whole: the API server answers and
	// the scheduler is healthy on its new port.
	_, err = cp.Client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, cp.waitHealthy(t.Context(), cp.components[3], cp.healthz[cp.components[3]], 10*time.Second))
}
