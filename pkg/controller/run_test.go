package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// countingMetrics counts failed syncs.
type countingMetrics struct{ failed atomic.Int32 }

func (r *countingMetrics) SyncFailed() { r.failed.Add(1) }

// TestFailedSyncsAreCounted: a sync that fails and is requeued counts once;
// one that succeeds does not.
func TestFailedSyncsAreCounted(t *testing.T) {
	rec := &countingMetrics{}
	f := newFixture(t, withMetrics(rec))
	f.addJob(builders.Job("broken", testNamespace))
	f.addJob(builders.Job("fine", testNamespace))
	f.kube.PrependReactor("create", "services", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.CreateAction).GetObject().(metav1.Object).GetName() == "broken-pserver" {
			return true, nil, errors.New("the API server is having a bad day")
		}
		return false, nil, nil
	})

	f.c.queue.Add(testNamespace + "/fine")
	require.True(t, f.c.processNextItem(context.Background()))
	assert.Equal(t, int32(0), rec.failed.Load())

	f.c.queue.Add(testNamespace + "/broken")
	require.True(t, f.c.processNextItem(context.Background()))
	assert.Equal(t, int32(1), rec.failed.Load())
}

// TestStatusConflictsAreRequeuedQuietly: a status write that loses to a
// newer write (the autoscaler's status patch) is requeued, not counted as a
// failed sync.
func TestStatusConflictsAreRequeuedQuietly(t *testing.T) {
	rec := &countingMetrics{}
	f := newFixture(t, withMetrics(rec))
	f.addJob(builders.Job("raced", testNamespace))
	f.tj.PrependReactor("update", "trainingjobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, apierrors.NewConflict(v1.Resource("trainingjobs"), "raced", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})

	key := testNamespace + "/raced"
	f.c.queue.Add(key)
	require.True(t, f.c.processNextItem(context.Background()))
	assert.Equal(t, int32(0), rec.failed.Load(), "a conflict is not a failure")
	assert.Equal(t, 1, f.c.queue.NumRequeues(key), "a conflict is retried")
}

// TestRunReturnsOnlyAfterItsSyncsFinish: a replica hands its leader lease over
// when Run returns, so Run must not return while a sync may still write.
func TestRunReturnsOnlyAfterItsSyncsFinish(t *testing.T) {
	f := newFixture(t)
	f.addJob(builders.Job("mnist", testNamespace))
	entered := make(chan struct{})
	release := make(chan struct{})
	var once atomic.Bool
	f.kube.PrependReactor("create", "services", func(clienttesting.Action) (bool, runtime.Object, error) {
		if once.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return false, nil, nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.kubeInf.Start(ctx.Done())
	f.tjInf.Start(ctx.Done())
	defer f.kubeInf.Shutdown()
	defer f.tjInf.Shutdown()
	returned := make(chan error, 1)
	go func() { returned <- f.c.Run(ctx, 2) }()

	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no sync started")
	}
	cancel()
	// Nothing can make Run return now but a broken wait: the sync in flight
	// is blocked until release. A short look suffices to catch that.
	select {
	case <-returned:
		t.Fatal("Run returned while a sync was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-returned:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return once the sync finished")
	}
}

// TestRunStoppedBeforeTheCachesSyncIsNoError: a replica told to stop while
// it starts exits cleanly.
func TestRunStoppedBeforeTheCachesSyncIsNoError(t *testing.T) {
	f := newFixture(t) // its informers never start: the caches never sync
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, f.c.Run(ctx, 1))
}
