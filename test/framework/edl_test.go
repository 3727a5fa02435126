package framework

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEDL is a shell script that logs edl's election line, then runs until
// SIGTERM, which it answers with a last line and exit status 0.
func fakeEDL(t *testing.T, opts EDLOptions) *EDL {
	t.Helper()
	opts.Binary = "/bin/sh"
	opts.Args = []string{"-c", `echo 't=1 lvl=info msg="waiting for the leader lease" lease=paddlecloud/edl-controller identity=host_1234'
trap 'echo "lvl=info msg=stopped"; exit 0' TERM
while :; do sleep 0.05; done`}
	return StartEDLForTest(t, opts)
}

func TestEDLHandle(t *testing.T) {
	e := fakeEDL(t, EDLOptions{})
	m, err := e.WaitForLine(t.Context(), EDLIdentityLine, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "host_1234", m[1])
	assert.Equal(t, "host_1234", e.Identity())
	exited, _ := e.Exited()
	assert.False(t, exited)

	require.NoError(t, e.Stop(10*time.Second), "SIGTERM exits 0")
	assert.Equal(t, "lvl=info msg=stopped", e.LastLine())
	assert.False(t, e.ExitedUnasked(), "the test stopped it")
	_, err = e.WaitForLine(t.Context(), regexp.MustCompile("never logged"), 10*time.Second)
	assert.ErrorIs(t, err, ErrEDLExited, "no wait for a line once edl is gone")
}

func TestEDLKillAndLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edl.log")
	e := fakeEDL(t, EDLOptions{LogPath: path})
	_, err := e.WaitForLine(t.Context(), EDLIdentityLine, 10*time.Second)
	require.NoError(t, err, "the log is read from the file")
	e.Kill()
	exited, err := e.Exited()
	assert.True(t, exited)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
	assert.Contains(t, e.Tail(5), "identity=host_1234")
}

func TestStartEDLFailsOnAnEarlyExit(t *testing.T) {
	_, err := StartEDL(EDLOptions{Binary: "/bin/sh", Args: []string{"-c", "echo bad flag; exit 2"}, StartupGrace: 5 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "edl exited at once")
	assert.Contains(t, err.Error(), "end of its log:\nbad flag")
}

func TestEDLExitedUnasked(t *testing.T) {
	e := StartEDLForTest(t, EDLOptions{Binary: "/bin/sh", Args: []string{"-c", "exit 1"}})
	exited, err := e.Wait(10 * time.Second)
	require.True(t, exited)
	assert.Error(t, err)
	assert.True(t, e.ExitedUnasked())
}

// TestBuildEDL builds cmd/edl once per process.
func TestBuildEDL(t *testing.T) {
	bin, err := BuildEDL()
	require.NoError(t, err)
	again, err := BuildEDL()
	require.NoError(t, err)
	assert.Equal(t, bin, again)
	out, err := exec.Command(bin, "-version").Output()
	require.NoError(t, err)
	assert.Regexp(t, `^edl \S+\n$`, string(out))
}
