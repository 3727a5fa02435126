package horovod

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// launch starts the master container's command with its launcher replaced
// by launcher, and EDL_STATE_DIR at state.
func launch(t *testing.T, state, launcher string) (*exec.Cmd, *output) {
	t.Helper()
	job := &v1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "hvd"}, Spec: v1.TrainingJobSpec{Framework: v1.FrameworkHorovod,
		Trainer: v1.TrainerSpec{MinInstance: 1, MaxInstance: 2, Entrypoint: "python3 train.py"}}}
	var c corev1.Container
	Framework{}.Container(job, v1.RoleMaster, &c, nil)
	require.Len(t, c.Command, 5)
	require.Contains(t, c.Command[4], "exec horovodrun --min-np 1 --max-np 2 --host-discovery-script /etc/edl/discover_hosts.sh python3 train.py")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, c.Command[0], append(c.Command[1:4], launcher)...) // #nosec G204 -- the test's own script
	cmd.Env = append(os.Environ(), "EDL_STATE_DIR="+state)
	cmd.WaitDelay = 5 * time.Second // a child left holding the output fails the test, never hangs it
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	return cmd, out
}

// output is a command's output, read while it runs.
type output struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	return ee.ExitCode()
}

// TestLauncherRunsOnce: the launcher's exit is the container's; after an
// exit 0 the container, started again, does not run the launcher but waits
// for SIGTERM and exits 0.
func TestLauncherRunsOnce(t *testing.T) {
	state := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	launcher := "echo run >>" + runs + "; exit 0"

	cmd, _ := launch(t, state, launcher)
	assert.Equal(t, 0, exitCode(t, cmd))
	require.FileExists(t, filepath.Join(state, "finished"))

	cmd, out := launch(t, state, launcher)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "not started again") }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, exitCode(t, cmd))
	data, err := os.ReadFile(runs)
	require.NoError(t, err)
	assert.Equal(t, "run\n", string(data), "the launcher ran once")
}

// TestLauncherFailureIsTheContainers: a launcher that fails leaves no mark
// and its code is the container's.
func TestLauncherFailureIsTheContainers(t *testing.T) {
	state := t.TempDir()
	cmd, _ := launch(t, state, "exit 3")
	assert.Equal(t, 3, exitCode(t, cmd))
	assert.NoFileExists(t, filepath.Join(state, "finished"))
}

// TestLauncherGetsSIGTERM: SIGTERM to the container's first process reaches
// the launcher, whose exit is the container's.
func TestLauncherGetsSIGTERM(t *testing.T) {
	state := t.TempDir()
	got := filepath.Join(t.TempDir(), "got")
	cmd, _ := launch(t, state, "trap 'echo term >"+got+"; exit 7' TERM; echo ready >"+got+"; while :; do sleep 0.1; done")
	require.Eventually(t, func() bool { _, err := os.Stat(got); return err == nil }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 7, exitCode(t, cmd))
	data, err := os.ReadFile(got)
	require.NoError(t, err)
	assert.Equal(t, "term\n", string(data))
	assert.NoFileExists(t, filepath.Join(state, "finished"))
}
