package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	log "github.com/inconshreveable/log15"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/paddlepaddle/edl/pkg/config"
)

// leaseName is the Lease the replicas of edl compete for.
const leaseName = config.LeaseName

// watchdogTimeout is how long past an unrenewed lease /healthz still passes:
// the renew loop should have given up and exited long before.
const watchdogTimeout = 20 * time.Second

// lostLeaseGrace bounds how long a replica that lost its lease waits for the
// controller and the autoscaler to return before it exits anyway.
const lostLeaseGrace = 5 * time.Second

// election is what runElected needs besides the work.
type election struct {
	client   kubernetes.Interface
	recorder resourcelock.EventRecorder
	watchdog *leaderelection.HealthzAdaptor
	log      log.Logger
	// setLeader reports whether this replica leads.
	setLeader func(bool)
	// publish, when not nil, writes what the leader runs with on the Lease
	// once it leads; a failure is logged, and the work goes on.
	publish func(context.Context) error

	namespace, identity                       string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	// lostGrace bounds the wait for work to return once the lease is lost.
	lostGrace time.Duration
}

// newIdentity names this replica in the lease: the pod name (the hostname
// in a cluster) and a random suffix, so that a restarted container never
// mistakes its predecessor's lease for its own.
func newIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "edl"
	}
	return host + "_" + string(uuid.NewUUID())
}

// checkLeaseNamespace fails fast, with one line, when the Lease cannot be
// created: its namespace is missing or RBAC forbids it. Without this check
// the elector would retry forever and the replica never lead. The check is a
// dry-run create, so it needs no permission beyond the elector's own.
func checkLeaseNamespace(ctx context.Context, client kubernetes.Interface, namespace string) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: leaseName}}
	_, err := client.CoordinationV1().Leases(namespace).Create(ctx, lease, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsNotFound(err): // a create finds no namespace
		return fmt.Errorf("the namespace %s of the leader Lease does not exist: create it, or pass -leader_elect_namespace, or -leader_elect=false for a single replica", namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to create the leader Lease in namespace %s: grant leases get, create and update there (see edl_controller.yaml): %w", namespace, err)
	default:
		return fmt.Errorf("check the leader Lease in namespace %s: %w", namespace, err)
	}
}

// runElected runs work only while this replica holds the lease. When ctx
// ends, it stops work, waits for it to return and only then releases the
// lease, so that two replicas never write at once and the next one takes
// over within a retry period; it then returns work's error. When the lease
// is lost, work's context ends and runElected returns an error at once: the
// process must exit, and its restart joins the election anew.
func runElected(ctx context.Context, e election, work func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: leaseName},
		Client:     e.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity, EventRecorder: e.recorder},
	}
	// The elector's context ends only once work has returned: cancelling it
	// is what releases the lease.
	electorCtx, release := context.WithCancel(context.WithoutCancel(ctx))
	defer release()

	var (
		mu       sync.Mutex
		stopping bool // ctx ended: start no work
		started  bool
		ended    bool // work returned while still leading
		workErr  error
	)
	workDone := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-electorCtx.Done():
			return
		}
		mu.Lock()
		stopping = true
		wait := started
		mu.Unlock()
		if wait {
			<-workDone
		}
		release()
	}()

	key := e.namespace + "/" + leaseName
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            leaseName,
		LeaseDuration:   e.leaseDuration,
		RenewDeadline:   e.renewDeadline,
		RetryPeriod:     e.retryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        e.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				started = true
				mu.Unlock()
				defer close(workDone)

				e.log.Info("started leading", "lease", key, "identity", e.identity)
				if e.publish != nil {
					if err := e.publish(leadCtx); err != nil {
						e.log.Warn("publishing the configuration failed; kubectl edl explain will not find it", "err", err)
					} else {
						e.log.Debug("published the configuration on the Lease", "lease", key)
					}
				}
				e.setLeader(true)
				defer e.setLeader(false) // before the lease is released
				workCtx, cancel := context.WithCancel(leadCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				err := work(workCtx)
				mu.Lock()
				workErr = err
				ended = ctx.Err() == nil && leadCtx.Err() == nil
				mu.Unlock()
				if ended {
					release() // work gave up on its own: hand over
				}
			},
			OnStoppedLeading: func() { e.setLeader(false) },
			OnNewLeader: func(identity string) {
				if identity != e.identity {
					e.log.Info("another replica leads", "lease", key, "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if e.watchdog != nil {
		e.watchdog.SetLeaderElection(elector)
	}
	e.log.Info("waiting for the leader lease", "lease", key, "identity", e.identity)
	elector.Run(electorCtx)

	mu.Lock()
	defer mu.Unlock()
	switch {
	case ctx.Err() != nil:
		if started {
			e.log.Info("stopped leading", "lease", key)
		}
		return workErr
	case ended:
		if workErr == nil {
			workErr = errors.New("the controller and the autoscaler stopped while leading")
		}
		return workErr
	default:
		// The lease is lost and work's context has ended: give work a
		// moment to log its last lines, so that the error is the process's
		// last line, but never wait on a write that hangs.
		if started {
			mu.Unlock()
			select {
			case <-workDone:
			case <-time.After(e.lostGrace):
			}
			mu.Lock()
		}
		return fmt.Errorf("lost the leader lease %s; exiting so that a restart rejoins the election", key)
	}
}
