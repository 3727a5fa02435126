package framework

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanIdleRealNodeLeavesARunningNodeAlone: while the machine's
// real-node lock is held, as a running real node holds it, cleaning up
// after another cluster touches nothing and says why.
func TestCleanIdleRealNodeLeavesARunningNodeAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the real-node lock is in /run: needs root")
	}
	lock, err := lockRealNode()
	require.NoError(t, err)
	defer lock.Close()
	err = CleanIdleRealNode()
	require.ErrorIs(t, err, ErrRealNodeInUse)
	assert.True(t, strings.Contains(err.Error(), realNodeLock), err.Error())
}

// TestRealNodeMissingSaysWhatInOneLine: a machine that cannot run a real
// node is told so in one line naming what is missing.
func TestRealNodeMissingSaysWhatInOneLine(t *testing.T) {
	missing := RealNodeMissing(t.TempDir())
	require.NotEmpty(t, missing, "an empty binary directory lacks kubelet at least")
	assert.NotContains(t, missing, "\n")
	if os.Geteuid() == 0 {
		assert.Contains(t, missing, "a real node needs ")
	} else {
		assert.Contains(t, missing, "needs root")
	}
}
