package framework

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startTimeout bounds StartForTest: a cold start takes seconds, and waiting
// longer only delays the report of a broken one.
const startTimeout = 3 * time.Minute

// StartForTest starts a control plane for t and stops it when t ends. If the
// start fails, t fails with the error and the end of every component's log.
// If t fails later, the end of the logs is logged before the control plane
// stops.
func StartForTest(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cp, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs in %s:\n%s", cp.Dir, cp.LogTails(30))
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cp
}

// NewNamespace creates a namespace with a generated name ("test-...") and
// deletes it when t ends.
func (cp *ControlPlane) NewNamespace(t testing.TB) string {
	t.Helper()
	ns, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a namespace: %v", err)
	}
	t.Cleanup(func() {
		err := cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// SyncBuffer is a bytes.Buffer safe for a process writing and a test reading.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
