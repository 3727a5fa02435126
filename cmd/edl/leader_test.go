package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/paddlepaddle/edl/pkg/config"
)

// Short but valid lease timings for the fake API server.
const (
	testLease = 1500 * time.Millisecond
	testRenew = 1000 * time.Millisecond
	testRetry = 100 * time.Millisecond
)

// patience bounds every wait of these tests; a slow machine only waits longer.
const patience = 30 * time.Second

func testElection(client kubernetes.Interface, identity string, leading *atomic.Bool) election {
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	return election{
		client: client, log: logger, namespace: "paddlecloud", identity: identity,
		setLeader:     func(b bool) { leading.Store(b) },
		leaseDuration: testLease, renewDeadline: testRenew, retryPeriod: testRetry,
	}
}

// leaseClient is a fake API server that, like a real one, rejects a Lease
// update based on an old resourceVersion: that is how a leader learns that
// someone else wrote the lease.
func leaseClient() *fake.Clientset {
	client := fake.NewClientset()
	var version atomic.Int64
	client.PrependReactor("create", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*coordinationv1.Lease).ResourceVersion = strconv.FormatInt(version.Add(1), 10)
		return false, nil, nil
	})
	client.PrependReactor("update", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		lease := a.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		stored, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), lease.Namespace, lease.Name)
		if err != nil {
			return true, nil, err
		}
		if stored.(*coordinationv1.Lease).ResourceVersion != lease.ResourceVersion {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), lease.Name, errors.New("the object has been modified"))
		}
		lease.ResourceVersion = strconv.FormatInt(version.Add(1), 10)
		return false, nil, nil
	})
	return client
}

func holder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases("paddlecloud").Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// TestReplicasNeverWorkAtOnce runs two replicas on one lease. The leader is
// stopped while its work is still finishing a write; the standby must not
// start before that write is done, and then takes over.
func TestReplicasNeverWorkAtOnce(t *testing.T) {
	client := leaseClient()
	var working, maxWorking atomic.Int32
	started := make(chan string, 2)
	work := func(identity string) func(context.Context) error {
		return func(ctx context.Context) error {
			n := working.Add(1)
			for {
				m := maxWorking.Load()
				if n <= m || maxWorking.CompareAndSwap(m, n) {
					break
				}
			}
			started <- identity
			<-ctx.Done()
			// A sync in flight when the context ends still writes.
			time.Sleep(300 * time.Millisecond)
			working.Add(-1)
			return nil
		}
	}
	type replica struct {
		cancel  context.CancelFunc
		done    chan error
		leading atomic.Bool
	}
	replicas := map[string]*replica{}
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		r := &replica{done: make(chan error, 1)}
		var ctx context.Context
		ctx, r.cancel = context.WithCancel(context.Background())
		replicas[id] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.done <- runElected(ctx, testElection(client, id, &r.leading), work(id))
		}()
	}
	defer func() {
		for _, r := range replicas {
			r.cancel()
		}
		wg.Wait()
	}()

	var first string
	select {
	case first = <-started:
	case <-time.After(patience):
		t.Fatal("no replica started leading")
	}
	second := map[string]string{"a": "b", "b": "a"}[first]
	assert.Equal(t, first, holder(t, client))
	assert.True(t, replicas[first].leading.Load())
	assert.False(t, replicas[second].leading.Load())

	replicas[first].cancel()
	select {
	case err := <-replicas[first].done:
		assert.NoError(t, err, "a clean shutdown is not an error")
	case <-time.After(patience):
		t.Fatal("the leader did not stop")
	}
	assert.False(t, replicas[first].leading.Load())
	select {
	case id := <-started:
		assert.Equal(t, second, id)
	case <-time.After(patience):
		t.Fatal("the standby never took over")
	}
	assert.Equal(t, second, holder(t, client))
	assert.Equal(t, int32(1), maxWorking.Load(), "two replicas worked at once")
}

// TestLosingTheLeaseIsAnError: when another holder takes the lease, work
// stops and runElected returns an error, so that the process exits; the
// error comes after work has returned, so that it is the last line logged.
func TestLosingTheLeaseIsAnError(t *testing.T) {
	workStopped := make(chan struct{})
	err := loseLease(t, func(ctx context.Context) error {
		<-ctx.Done()
		close(workStopped)
		return nil
	})
	assert.Equal(t, "lost the leader lease paddlecloud/edl-controller; exiting so that a restart rejoins the election", err.Error())
	select {
	case <-workStopped:
	default:
		t.Fatal("runElected returned before work did")
	}
}

// TestLosingTheLeaseDoesNotWaitOnHungWork: work that does not return once
// its context ends keeps the process for the grace period only.
func TestLosingTheLeaseDoesNotWaitOnHungWork(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	err := loseLease(t, func(context.Context) error {
		<-hang
		return nil
	})
	assert.Contains(t, err.Error(), "lost the leader lease")
}

// loseLease runs work under runElected, lets someone else take the lease
// and returns runElected's error.
func loseLease(t *testing.T, work func(context.Context) error) error {
	t.Helper()
	client := leaseClient()
	var leading atomic.Bool
	begun := make(chan struct{})
	done := make(chan error, 1)
	e := testElection(client, "a", &leading)
	e.lostGrace = testRetry
	go func() {
		done <- runElected(context.Background(), e, func(ctx context.Context) error {
			close(begun)
			return work(ctx)
		})
	}()
	select {
	case <-begun:
	case <-time.After(patience):
		t.Fatal("never led")
	}
	// Someone else writes the lease as theirs, renewed far in the future.
	lease, err := client.CoordinationV1().Leases("paddlecloud").Get(context.Background(), leaseName, metav1.GetOptions{})
	require.NoError(t, err)
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("usurper"), LeaseDurationSeconds: ptr.To(int32(3600)),
		AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}
	_, err = client.CoordinationV1().Leases("paddlecloud").Update(context.Background(), lease, metav1.UpdateOptions{})
	require.NoError(t, err)

	select {
	case err := <-done:
		require.Error(t, err)
		assert.False(t, leading.Load())
		return err
	case <-time.After(patience):
		t.Fatal("the lost lease went unnoticed")
		return nil
	}
}

// TestStandbyStopsWithoutWorking: a replica that never led stops at once and
// never ran its work.
func TestStandbyStopsWithoutWorking(t *testing.T) {
	client := leaseClient()
	_, err := client.CoordinationV1().Leases("paddlecloud").Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaseName, Namespace: "paddlecloud"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	var leading, worked atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runElected(ctx, testElection(client, "b", &leading), func(context.Context) error {
			worked.Store(true)
			return nil
		})
	}()
	time.Sleep(3 * testRetry) // a few failed attempts to acquire
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("the standby did not stop")
	}
	assert.False(t, worked.Load())
	assert.Equal(t, "other", holder(t, client), "a standby leaves the lease alone")
}

// TestWorkEndingWhileLeadingHandsOver: if the work gives up on its own, the
// lease is released and the error returned.
func TestWorkEndingWhileLeadingHandsOver(t *testing.T) {
	client := leaseClient()
	var leading atomic.Bool
	err := runElected(context.Background(), testElection(client, "a", &leading), func(context.Context) error { return nil })
	require.EqualError(t, err, "the controller and the autoscaler stopped while leading")
	assert.Equal(t, "", holder(t, client), "the lease is released")
}

func TestLeaseNamespaceCheck(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{name: "can create"},
		{name: "exists already", err: apierrors.NewAlreadyExists(coordinationv1.Resource("leases"), leaseName)},
		{name: "no namespace", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "paddlecloud"),
			want: "the namespace paddlecloud of the leader Lease does not exist: create it, or pass -leader_elect_namespace, or -leader_elect=false for a single replica"},
		{name: "forbidden", err: apierrors.NewForbidden(coordinationv1.Resource("leases"), leaseName, errors.New("RBAC says no")),
			want: "not allowed to create the leader Lease in namespace paddlecloud"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client := fake.NewClientset()
			var dryRun []string
			client.PrependReactor("create", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
				dryRun = a.(clienttesting.CreateActionImpl).CreateOptions.DryRun
				return c.err != nil, nil, c.err
			})
			err := checkLeaseNamespace(context.Background(), client, "paddlecloud")
			if c.want == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
			}
			assert.Equal(t, []string{metav1.DryRunAll}, dryRun, "the check writes nothing")
		})
	}
}

// TestTheLeaderPublishesItsConfiguration: each replica that starts leading
// writes its configuration and identity on the Lease, and the write does not
// cost it the Lease (the elector's next renewal, from an older version of
// the Lease, conflicts once and reads it again).
func TestTheLeaderPublishesItsConfiguration(t *testing.T) {
	client := leaseClient()
	configs := map[string]*config.EDLConfiguration{
		"a": config.Merge(config.Default(), &config.EDLConfiguration{Autoscaler: config.AutoscalerConfiguration{MaxLoadDesired: ptr.To(0.5)}}),
		"b": config.Merge(config.Default(), &config.EDLConfiguration{Autoscaler: config.AutoscalerConfiguration{MaxLoadDesired: ptr.To(0.7)}}),
	}
	run := func(id string) (context.CancelFunc, chan error) {
		var leading atomic.Bool
		e := testElection(client, id, &leading)
		e.publish = func(ctx context.Context) error {
			return config.Publish(ctx, client.CoordinationV1(), "paddlecloud", id, "test", configs[id])
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runElected(ctx, e, func(ctx context.Context) error { <-ctx.Done(); return nil }) }()
		return cancel, done
	}
	published := func(leader string, maxLoad float64) {
		t.Helper()
		require.Eventually(t, func() bool {
			p, err := config.Published(context.Background(), client.CoordinationV1(), "paddlecloud")
			return err == nil && p.Current() && p.Leader == leader && *p.Configuration.Autoscaler.MaxLoadDesired == maxLoad
		}, patience, 10*time.Millisecond, "%s's configuration on the Lease", leader)
	}
	stopA, doneA := run("a")
	published("a", 0.5)
	time.Sleep(5 * testRetry) // renewals after the publication
	assert.Equal(t, "a", holder(t, client), "the publication did not cost the Lease")

	stopB, doneB := run("b")
	defer func() { stopB(); <-doneB }()
	stopA()
	require.NoError(t, <-doneA)
	published("b", 0.7)
}
