//go:build linux

package pytorch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWrapperTellsWhyTheTrainingFailed: torchrun tees its workers' stderr
// into the state dir, and when the agent fails the end of the worker's
// that holds a traceback — not torchrun's summary — goes to the
// termination log, which the controller reads into the job's status.
func TestWrapperTellsWhyTheTrainingFailed(t *testing.T) {
	ctx := testContext(t)
	state, why := t.TempDir(), filepath.Join(t.TempDir(), "termination-log")
	r := start(ctx, t, "fail 1", withStateDir(state), withTerminationLog(why))
	assert.Equal(t, 1, r.wait(ctx, t))
	assert.Equal(t, filepath.Join(state, "torchrun")+" 2\n", r.read(t, "agent-env"), "stderr teed into the state dir")
	msg, err := os.ReadFile(why)
	require.NoError(t, err)
	assert.Equal(t, "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nValueError: invalid literal for int() with base 10: 'notanumber'\n", string(msg))

	// The next run starts with the logs of the last one gone, and prints
	// the failure first, once: the kubelet keeps the log of a pod's last
	// run alone.
	r = start(ctx, t, "exit 0", withStateDir(state), withTerminationLog(filepath.Join(t.TempDir(), "unused")))
	assert.Equal(t, 0, r.wait(ctx, t))
	assert.NoDirExists(t, filepath.Join(state, "torchrun"))
	assert.Regexp(t, `^edl: the run before this one failed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; the end of its worker's stderr:\n`+
		`edl: \| Traceback \(most recent call last\):\n(.*\n)*edl: \| ValueError: invalid literal for int\(\) with base 10: 'notanumber'\n`, r.output(t))
	assert.NoFileExists(t, filepath.Join(state, "last-failure"))
	require.NoError(t, os.Remove(filepath.Join(state, "finished")))
	r = start(ctx, t, "exit 0", withStateDir(state))
	assert.Equal(t, 0, r.wait(ctx, t))
	assert.NotContains(t, r.output(t), "failed", "told once")

	// Without a state dir, torchrun's logs are its own.
	r = start(ctx, t, "exit 3")
	assert.Equal(t, 3, r.wait(ctx, t))
	assert.Equal(t, "None None\n", r.read(t, "agent-env"))
}

// TestWrapperLeavesTheRendezvousOpen: the agent's rendezvous handler, shut
// down as an agent that exits shuts it, stops its heartbeats and leaves the
// round — it never closes the rendezvous, which would keep every trainer
// from joining again.
func TestWrapperLeavesTheRendezvousOpen(t *testing.T) {
	ctx := testContext(t)
	r := start(ctx, t, "shutdown 1")
	assert.Equal(t, 1, r.wait(ctx, t))
	assert.Equal(t, "heartbeats stopped\nleft\n", r.read(t, "rendezvous"))
	assert.Empty(t, r.output(t), "patched without a word")
}
