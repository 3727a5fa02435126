package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	log "github.com/inconshreveable/log15"
	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/frameworks"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions/paddlepaddle/v1"
	tjlisters "github.com/paddlepaddle/edl/pkg/generated/listers/paddlepaddle/v1"
)

// Controller runs TrainingJobs: it creates and owns each job's ReplicaSets
// and Services and writes the job's status. The trainer count belongs to the
// autoscaler once the trainer ReplicaSet exists; the controller only clamps
// it into [min-instance, max-instance].
type Controller struct {
	kubeClient kubernetes.Interface
	tjClient   tjclient.Interface

	jobs        tjlisters.TrainingJobLister
	replicaSets appslisters.ReplicaSetLister
	services    corelisters.ServiceLister
	configMaps  corelisters.ConfigMapLister
	pdbs        policylisters.PodDisruptionBudgetLister
	pods        cache.Indexer
	synced      []cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[string]
	pacer    *pacer // spaces the status writes that change only counts
	recorder record.EventRecorder
	metrics  Metrics
	log      log.Logger
	gpus     []corev1.ResourceName // counted as GPUs in the trainers' environment
	gang     bool                  // gang admission: new jobs' pods are gated until admitted
	holds    hostsHolds            // the Horovod jobs' scale-downs held for their hosts files
}

// Metrics counts what the controller measures; pkg/metrics implements it
// for Prometheus.
type Metrics interface {
	// SyncFailed counts a sync that returned an error and was requeued.
	SyncFailed()
}

// Config is what a Controller reads, writes and reports to.
type Config struct {
	KubeClient kubernetes.Interface
	TJClient   tjclient.Interface

	// The informers of the jobs and the objects they own. The pod informer
	// may be shared (with the cluster tracker).
	JobInformer        tjinformers.TrainingJobInformer
	ReplicaSetInformer appsinformers.ReplicaSetInformer
	ServiceInformer    coreinformers.ServiceInformer
	PodInformer        coreinformers.PodInformer
	// ConfigMapInformer holds the Horovod jobs' host-discovery ConfigMaps
	// ([HostsConfigMap]).
	ConfigMapInformer coreinformers.ConfigMapInformer
	// PDBInformer holds the masters' PodDisruptionBudgets
	// ([MasterDisruptionBudget]).
	PDBInformer policyinformers.PodDisruptionBudgetInformer

	// Recorder records the events of the jobs.
	Recorder record.EventRecorder
	Logger   log.Logger
	// Metrics receives the controller's measurements; nil reports nothing.
	Metrics Metrics
	// GPUResources names the extended resources counted as GPUs in the
	// trainers' PADDLE_INIT_USE_GPU and PADDLE_INIT_TRAINER_COUNT (edl's
	// -gpu_resources); empty means cluster.DefaultGPUResourceName.
	GPUResources []corev1.ResourceName
	// GangAdmission creates the pods of a new job with the scheduling gate
	// v1.SchedulingGateAdmission, which stays until the autoscaler admits
	// the job ([isQueued], [Controller.ensureUngated]); off, no job is gated and queued jobs are
	// released.
	GangAdmission bool
	// StatusInterval is the least time between two status writes of a job
	// that change only its replica counts ([Controller.writeStatus]); a change of phase or
	// condition is written at once. 0 writes every change at once. edl
	// passes -autoscale_interval: the counts move mostly because a plan
	// scaled, once an interval.
	StatusInterval time.Duration
	// Clock paces the status writes and the workqueue's delays; nil means
	// the real clock.
	Clock clock.WithTicker
}

// New wires the controller to its informers. New adds an index to the pod
// informer, so it must be called before the informers start.
func New(cfg Config) (*Controller, error) {
	jobInformer, rsInformer := cfg.JobInformer, cfg.ReplicaSetInformer
	svcInformer, podInformer, cmInformer, pdbInformer := cfg.ServiceInformer, cfg.PodInformer, cfg.ConfigMapInformer, cfg.PDBInformer
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		kubeClient:  cfg.KubeClient,
		tjClient:    cfg.TJClient,
		jobs:        jobInformer.Lister(),
		replicaSets: rsInformer.Lister(),
		services:    svcInformer.Lister(),
		configMaps:  cmInformer.Lister(),
		pdbs:        pdbInformer.Lister(),
		pods:        podInformer.Informer().GetIndexer(),
		synced: []cache.InformerSynced{
			jobInformer.Informer().HasSynced, rsInformer.Informer().HasSynced,
			svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			cmInformer.Informer().HasSynced, pdbInformer.Informer().HasSynced,
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "trainingjobs", Clock: clk},
		),
		pacer:    newPacer(cfg.StatusInterval, clk),
		recorder: cfg.Recorder,
		metrics:  cfg.Metrics,
		log:      cfg.Logger,
		gpus:     append([]corev1.ResourceName(nil), cfg.GPUResources...),
		gang:     cfg.GangAdmission,
	}
	if err := podInformer.Informer().AddIndexers(cache.Indexers{jobIndex: podJobKeys}); err != nil {
		return nil, fmt.Errorf("add the job index to the pod informer: %w", err)
	}

	// Every job update is synced, the periodic resync's too: that is what
	// brings back a job whose last sync saw a transient state.
	jobHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}
	ownedHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(old, cur any) { c.enqueueIfChanged(old, cur, c.enqueueOwner) },
		DeleteFunc: c.enqueueOwner,
	}
	podHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueuePodJob,
		UpdateFunc: func(old, cur any) { c.enqueueIfChanged(old, cur, c.enqueuePodJob) },
		DeleteFunc: c.enqueuePodJob,
	}
	for _, reg := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{jobInformer.Informer(), jobHandler},
		{rsInformer.Informer(), ownedHandler},
		{svcInformer.Informer(), ownedHandler},
		{cmInformer.Informer(), ownedHandler},
		{pdbInformer.Informer(), ownedHandler},
		{podInformer.Informer(), podHandler},
	} {
		if _, err := reg.informer.AddEventHandler(reg.handler); err != nil {
			return nil, fmt.Errorf("add event handler: %w", err)
		}
	}
	return c, nil
}

// rateLimiter paces the retries of failing syncs: per job exponentially from
// 5 ms up to 30 s (client-go's default goes up to 1,000 s, which after an API
// server outage of a minute leaves jobs waiting a quarter of an hour), and
// 10 per second with bursts of 100 overall.
func rateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Run starts workers and blocks until ctx is done and every worker has
// finished its sync in flight: a caller that hands leadership over after
// Run returns knows this replica writes nothing more.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	c.log.Info("starting the TrainingJob controller", "workers", workers)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil // stopped before the caches synced: nothing to do
		}
		return errors.New("the informers' caches did not sync")
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.runWorker, time.Second)
		}()
	}
	<-ctx.Done()
	c.log.Info("stopping the TrainingJob controller")
	c.queue.ShutDown() // wakes the workers waiting for a key
	wg.Wait()
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextItem(ctx) {
	}
}

func (c *Controller) processNextItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)

	if err := c.sync(ctx, key); err != nil {
		if onlyRefusals(err) {
			// The job's ChildrenAccepted condition and a Warning event say
			// it; the retry finds out whether the quota or policy changed.
			c.log.Debug("the API server refused an object of the job; retrying", "job", key, "err", err)
			c.queue.AddRateLimited(key)
			return true
		}
		if apierrors.IsConflict(err) {
			// Someone (the autoscaler, a user) wrote the object since the
			// informer saw it: not a failure; the next sync reads the newer
			// version, which the informer delivers moments later.
			c.log.Debug("sync raced another write; retrying", "job", key, "err", err)
			c.queue.AddRateLimited(key)
			return true
		}
		c.log.Warn("sync failed; retrying", "job", key, "err", err)
		if c.metrics != nil {
			c.metrics.SyncFailed()
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// roles are the roles a job runs, as its framework says.
func roles(job *v1.TrainingJob) []v1.Role { return frameworks.For(&job.Spec).Roles(&job.Spec) }

// sync brings one job's objects and status to what its spec asks for.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	shared, err := c.jobs.TrainingJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.pacer.forget(key)
		return nil // deleted: the garbage collector removes what it owned
	}
	if err != nil {
		return err
	}
	job := shared.DeepCopy()
	v1.SetObjectDefaults_TrainingJob(job)

	if errs := v1.Validate(job); len(errs) > 0 {
		return c.markInvalid(ctx, shared, errs.ToAggregate().Error())
	}

	jobRoles := roles(job)
	obs, err := c.observe(job, jobRoles)
	if err != nil {
		return err
	}
	obs.now = c.pacer.clock.Now()
	obs.queued = isQueued(job, obs, c.gang)
	status := computeStatus(job, obs, jobRoles)
	final := status.Phase == v1.PhaseSucceeded || status.Phase == v1.PhaseFailed
	if final && shared.Status.Phase != status.Phase {
		// The verdict is stored before the ReplicaSets scale to 0: their
		// pods are its evidence (a trainer's exit 0), and a sync whose
		// status write lost a race (to the autoscaler's record of a
		// resize, say) would find none left and judge the job Running
		// again, its finished training started over.
		if shared, err = c.writeVerdict(ctx, shared, status); err != nil {
			return err
		}
		c.recordEdges(job, status, obs.refused)
		job.Status = *shared.Status.DeepCopy() // what the status below starts from
	}
	stop := stopReason(job, final, obs.queued)
	if final {
		if deleted, err := c.expire(ctx, key, job, obs.now); err != nil || deleted {
			return err // past its TTL, the job is gone, and what it owns with it
		}
	}

	var errs, refused []error
	var refusals []refusal
	// report keeps a write's error; a refusal is also reported on the job.
	report := func(err error) {
		if r, ok := refusalOf(err); ok {
			refusals = append(refusals, r)
			refused = append(refused, &refusedError{err})
			return
		}
		errs = append(errs, err)
	}
	if len(obs.blocked) == 0 {
		// The hosts file drops the trainers a scale-down removes before
		// the ReplicaSet is lowered ([horovod.Hosts]).
		acked := true
		if frameworks.LeavesFirst(&job.Spec) {
			var err error
			if acked, err = c.ensureHosts(ctx, job, trainerReplicas(job, obs, final, stop), obs.pods[v1.RoleTrainer], obs.pods[v1.RoleMaster], obs.now); err != nil {
				report(err)
			}
		}
		if !final {
			if err := c.ensureMasterBudget(ctx, job); err != nil {
				report(err)
			}
			if err := c.ensureProgress(ctx, job); err != nil {
				report(err)
			}
		}
		for _, role := range jobRoles {
			if role != v1.RoleTrainer {
				if err := c.ensureService(ctx, job, role); err != nil {
					report(err)
				}
			}
			if stop == stopFinished {
				// A finished job's pods kept for their logs leave their
				// ReplicaSet, which goes.
				if kept, err := c.keepPods(ctx, job, role, obs.replicaSets[role], obs.pods[role]); kept || err != nil {
					if err != nil {
						report(err)
					}
					continue
				}
			}
			if err := c.ensureReplicaSet(ctx, job, role, obs.replicaSets[role], rsInputs{stop: stop, queued: obs.queued, acked: acked, trainersLeft: countPods(obs.pods[v1.RoleTrainer], notEnded) > 0}); err != nil {
				report(err)
			}
		}
		if !obs.queued {
			if err := c.ensureUngated(ctx, job, obs, jobRoles); err != nil {
				report(err)
			}
		}
		if !final {
			if err := c.ensureDeletionCosts(ctx, key, job, obs.pods[v1.RoleTrainer], trainerReplicas(job, obs, final, stop), obs.now); err != nil {
				errs = append(errs, err)
			}
		}
		obs.tried = !final
	}
	// The status reports what this sync's writes met, before the pods'
	// refusals that the ReplicaSets report.
	obs.refused = append(refusals, obs.refused...)
	status = computeStatus(job, obs, jobRoles)
	errs = append(errs, refused...)
	if wait := c.pacer.wait(key, &shared.Status, &status); wait > 0 {
		// Only counts changed, and the job's status was written less than
		// an interval ago: the sync at the end of the interval writes them.
		c.queue.AddAfter(key, wait)
		return errors.Join(errs...)
	}
	// Edges are recorded only once the status that marks them is stored: a
	// sync from a stale cache computes the same edge again, and its write
	// fails on the old resourceVersion instead of repeating the event.
	if written, err := c.writeStatus(ctx, shared, status); err != nil {
		errs = append(errs, err)
	} else if written {
		c.recordEdges(shared, status, obs.refused)
	}
	return errors.Join(errs...)
}

// observe reads the job's ReplicaSets, Services and pods from the listers.
// An object with one of the job's names that the job does not control is
// "in the way": it is reported, never adopted, patched or deleted.
func (c *Controller) observe(job *v1.TrainingJob, jobRoles []v1.Role) (observed, error) {
	obs := observed{replicaSets: map[v1.Role]*appsv1.ReplicaSet{}, services: map[v1.Role]*corev1.Service{}, pods: map[v1.Role][]*cluster.Pod{}}
	for _, role := range jobRoles {
		rs, err := c.replicaSets.ReplicaSets(job.Namespace).Get(v1.ReplicaSetName(job.Name, role))
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return obs, err
		case !controlledBy(rs, job):
			obs.blocked = append(obs.blocked, "ReplicaSet "+rs.Name)
		default:
			obs.replicaSets[role] = rs
			if r, ok := podRefusal(rs); ok {
				obs.refused = append(obs.refused, r)
			}
		}
		if role == v1.RoleTrainer {
			continue
		}
		svc, err := c.services.Services(job.Namespace).Get(v1.ServiceName(job.Name, role))
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return obs, err
		case !controlledBy(svc, job):
			obs.blocked = append(obs.blocked, "Service "+svc.Name)
		default:
			obs.services[role] = svc
		}
	}
	if err := c.observeProgress(job, &obs); err != nil {
		return obs, err
	}
	objs, err := c.pods.ByIndex(jobIndex, job.Namespace+"/"+job.Name)
	if err != nil {
		return obs, err
	}
	for _, obj := range objs {
		pod, ok := cluster.PodOf(obj)
		if !ok {
			continue
		}
		for _, role := range jobRoles {
			if pod.Labels[v1.LabelFor(role)] == job.Name {
				obs.pods[role] = append(obs.pods[role], pod)
			}
		}
	}
	return obs, nil
}

// controlledBy: the object's controller reference is this job, by UID too,
// so that a job re-created with the same name does not claim its
// predecessor's objects while the garbage collector removes them.
func controlledBy(obj metav1.Object, job *v1.TrainingJob) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == job.UID
}

// desiredReplicas is what a role's ReplicaSet should run. The trainer count
// is the autoscaler's: it is only clamped into [min, max].
func desiredReplicas(job *v1.TrainingJob, role v1.Role, current *int32, final bool) int32 {
	switch {
	case final:
		return 0
	case role == v1.RoleMaster:
		return 1
	case role == v1.RolePserver:
		return job.Spec.Pserver.MinInstance
	case current == nil:
		return job.Spec.Trainer.MinInstance
	default:
		return min(max(*current, job.Spec.Trainer.MinInstance), job.Spec.Trainer.MaxInstance)
	}
}

// markInvalid fails a job whose spec breaks the schema's rules; nothing is
// created for it.
func (c *Controller) markInvalid(ctx context.Context, job *v1.TrainingJob, message string) error {
	if job.Status.Phase == v1.PhaseSucceeded || job.Status.Phase == v1.PhaseFailed {
		return nil // a finished job stays as it finished, whatever a newer CRD thinks of its spec
	}
	status := *job.Status.DeepCopy()
	status.Phase, status.Reason, status.Message = v1.PhaseFailed, v1.ReasonInvalid, message
	status.ObservedGeneration = job.Generation
	setConditions(&status, job.Generation, verdict{v1.PhaseFailed, v1.ReasonInvalid, message}, observed{})
	written, err := c.writeStatus(ctx, job, status)
	if written {
		c.log.Warn("invalid job", "job", job.Namespace+"/"+job.Name, "err", message)
		c.recorder.Event(job, corev1.EventTypeWarning, v1.ReasonInvalid, message)
	}
	return err
}
