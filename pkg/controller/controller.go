package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	log "github.com/inconshreveable/log15"
	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions/paddlepaddle/v1"
	tjlisters "github.com/paddlepaddle/edl/pkg/generated/listers/paddlepaddle/v1"
)

// jobIndex is the pod-informer index from a pod to the key of its job.
const jobIndex = "edl-job"

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
	pods        cache.Indexer
	synced      []cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	metrics  Metrics
	log      log.Logger
	gpus     []corev1.ResourceName // counted as GPUs in the trainers' environment
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

	// Recorder records the events of the jobs.
	Recorder record.EventRecorder
	Logger   log.Logger
	// Metrics receives the controller's measurements; nil reports nothing.
	Metrics Metrics
	// GPUResources names the extended resources counted as GPUs in the
	// trainers' PADDLE_INIT_USE_GPU and PADDLE_INIT_TRAINER_COUNT (edl's
	// -gpu_resources); empty means cluster.DefaultGPUResourceName.
	GPUResources []corev1.ResourceName
}

// New wires the controller to its informers. New adds an index to the pod
// informer, so it must be called before the informers start.
func New(cfg Config) (*Controller, error) {
	jobInformer, rsInformer := cfg.JobInformer, cfg.ReplicaSetInformer
	svcInformer, podInformer := cfg.ServiceInformer, cfg.PodInformer
	c := &Controller{
		kubeClient:  cfg.KubeClient,
		tjClient:    cfg.TJClient,
		jobs:        jobInformer.Lister(),
		replicaSets: rsInformer.Lister(),
		services:    svcInformer.Lister(),
		pods:        podInformer.Informer().GetIndexer(),
		synced: []cache.InformerSynced{
			jobInformer.Informer().HasSynced, rsInformer.Informer().HasSynced,
			svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "trainingjobs"},
		),
		recorder: cfg.Recorder,
		metrics:  cfg.Metrics,
		log:      cfg.Logger,
		gpus:     append([]corev1.ResourceName(nil), cfg.GPUResources...),
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

// podJobKeys indexes a pod under the key of the job its role label names.
func podJobKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if job, _, ok := v1.JobOf(pod.Labels); ok {
		return []string{pod.Namespace + "/" + job}, nil
	}
	return nil, nil
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

// enqueue adds a job's key; it takes jobs and their tombstones.
func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// enqueueIfChanged skips the periodic resync's updates of unchanged objects.
func (c *Controller) enqueueIfChanged(old, cur any, enqueue func(any)) {
	o, err1 := objectMeta(old)
	n, err2 := objectMeta(cur)
	if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
		return
	}
	enqueue(cur)
}

func objectMeta(obj any) (metav1.Object, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return m, nil
}

// enqueueOwner maps a ReplicaSet or Service to its job: its controller when
// that is a TrainingJob, else the job its name belongs to (a foreign object
// in a job's way), so that the job notices when the object goes away.
func (c *Controller) enqueueOwner(obj any) {
	m, err := objectMeta(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "TrainingJob" &&
		strings.HasPrefix(ref.APIVersion, v1.SchemeGroupVersion.Group+"/") {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
		return
	}
	if name, _, ok := v1.JobOfName(m.GetName()); ok {
		if _, err := c.jobs.TrainingJobs(m.GetNamespace()).Get(name); err == nil {
			c.queue.Add(m.GetNamespace() + "/" + name)
		}
	}
}

func (c *Controller) enqueuePodJob(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	keys, _ := podJobKeys(obj)
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// roles are the roles a job runs: a master only when fault tolerant.
func roles(job *v1.TrainingJob) []v1.Role {
	if job.Spec.FaultTolerant {
		return []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer}
	}
	return []v1.Role{v1.RolePserver, v1.RoleTrainer}
}

// sync brings one job's objects and status to what its spec asks for.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	shared, err := c.jobs.TrainingJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
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
	status := computeStatus(job, obs, jobRoles)
	final := status.Phase == v1.PhaseSucceeded || status.Phase == v1.PhaseFailed

	var errs []error
	if len(obs.blocked) == 0 {
		for _, role := range jobRoles {
			if role != v1.RoleTrainer {
				if err := c.ensureService(ctx, job, role); err != nil {
					errs = append(errs, err)
				}
			}
			if err := c.ensureReplicaSet(ctx, job, role, obs.replicaSets[role], final); err != nil {
				errs = append(errs, err)
			}
		}
		if !final {
			if err := c.ensureDeletionCosts(ctx, job, obs.pods[v1.RoleTrainer]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Edges are recorded only once the status that marks them is stored: a
	// sync from a stale cache computes the same edge again, and its write
	// fails on the old resourceVersion instead of repeating the event.
	if written, err := c.writeStatus(ctx, shared, status); err != nil {
		errs = append(errs, err)
	} else if written {
		c.recordEdges(shared, status)
	}
	return errors.Join(errs...)
}

// observe reads the job's ReplicaSets, Services and pods from the listers.
// An object with one of the job's names that the job does not control is
// "in the way": it is reported, never adopted, patched or deleted.
func (c *Controller) observe(job *v1.TrainingJob, jobRoles []v1.Role) (observed, error) {
	obs := observed{replicaSets: map[v1.Role]*appsv1.ReplicaSet{}, pods: map[v1.Role][]*corev1.Pod{}}
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
		}
	}
	objs, err := c.pods.ByIndex(jobIndex, job.Namespace+"/"+job.Name)
	if err != nil {
		return obs, err
	}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
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

func (c *Controller) ensureReplicaSet(ctx context.Context, job *v1.TrainingJob, role v1.Role, existing *appsv1.ReplicaSet, final bool) error {
	if existing == nil {
		if final {
			return nil
		}
		rs := ReplicaSet(job, role, desiredReplicas(job, role, nil, false), c.gpus)
		_, err := c.kubeClient.AppsV1().ReplicaSets(job.Namespace).Create(ctx, rs, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; its event brings the job back
		}
		if err != nil {
			return fmt.Errorf("create ReplicaSet %s: %w", rs.Name, err)
		}
		c.log.Info("created ReplicaSet", "job", job.Namespace+"/"+job.Name, "replicaset", rs.Name, "replicas", *rs.Spec.Replicas)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created ReplicaSet %s with %d replicas", rs.Name, *rs.Spec.Replicas)
		return nil
	}

	want := ReplicaSet(job, role, desiredReplicas(job, role, existing.Spec.Replicas, final), c.gpus)
	have := int32(1)
	if existing.Spec.Replicas != nil {
		have = *existing.Spec.Replicas
	}
	// A JSON patch, so that a new template replaces the old one whole:
	// fields the job no longer sets disappear with it.
	var ops []jsonPatchOp
	if have != *want.Spec.Replicas {
		ops = append(ops, jsonPatchOp{"replace", "/spec/replicas", *want.Spec.Replicas})
	}
	if hash := want.Annotations[AnnotationTemplateHash]; existing.Annotations[AnnotationTemplateHash] != hash {
		// The job's spec changed: new pods start from the new template; a
		// ReplicaSet never restarts running ones.
		ops = append(ops, jsonPatchOp{"replace", "/spec/template", want.Spec.Template})
		if existing.Annotations == nil {
			ops = append(ops, jsonPatchOp{"add", "/metadata/annotations", want.Annotations})
		} else {
			ops = append(ops, jsonPatchOp{"add", "/metadata/annotations/" + escapeJSONPointer(AnnotationTemplateHash), hash})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := c.kubeClient.AppsV1().ReplicaSets(job.Namespace).Patch(ctx, existing.Name, types.JSONPatchType, data, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch ReplicaSet %s: %w", existing.Name, err)
	}
	if have != *want.Spec.Replicas {
		why := fmt.Sprintf("clamped into [%d, %d]", job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance)
		switch {
		case final:
			why = "the job finished"
		case role != v1.RoleTrainer:
			why = "the spec asks for it"
		}
		c.log.Info("scaled ReplicaSet", "job", job.Namespace+"/"+job.Name, "replicaset", existing.Name, "from", have, "to", *want.Spec.Replicas, "reason", why)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventScaled, "Scaled ReplicaSet %s from %d to %d: %s", existing.Name, have, *want.Spec.Replicas, why)
	}
	return nil
}

// ensureDeletionCosts annotates the running trainers whose deletion cost
// differs from what DeletionCosts wants; most syncs write nothing.
func (c *Controller) ensureDeletionCosts(ctx context.Context, job *v1.TrainingJob, trainers []*corev1.Pod) error {
	costs := DeletionCosts(job, trainers)
	for _, pod := range trainers {
		cost, ok := costs[pod.Name]
		if !ok || pod.Annotations[v1.AnnotationDeletionCost] == cost {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1.AnnotationDeletionCost: cost}}})
		if err != nil {
			return err
		}
		_, err = c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("set the deletion cost of trainer pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// escapeJSONPointer escapes a map key for a JSON pointer (RFC 6901).
func escapeJSONPointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

func (c *Controller) ensureService(ctx context.Context, job *v1.TrainingJob, role v1.Role) error {
	want := Service(job, role)
	existing, err := c.services.Services(job.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err := c.kubeClient.CoreV1().Services(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create Service %s: %w", want.Name, err)
		}
		c.log.Info("created Service", "job", job.Namespace+"/"+job.Name, "service", want.Name)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created Service %s", want.Name)
		return nil
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(existing.Spec.Selector, want.Spec.Selector) && samePorts(existing.Spec.Ports, want.Spec.Ports) {
		return nil
	}
	update := existing.DeepCopy()
	update.Spec.Selector, update.Spec.Ports = want.Spec.Selector, want.Spec.Ports
	if _, err := c.kubeClient.CoreV1().Services(job.Namespace).Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Service %s: %w", want.Name, err)
	}
	return nil
}

// samePorts compares the fields the controller sets; the API server fills
// in others (NodePort, AppProtocol) that are not drift.
func samePorts(have, want []corev1.ServicePort) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if have[i].Name != want[i].Name || have[i].Port != want[i].Port || have[i].TargetPort != want[i].TargetPort || have[i].Protocol != want[i].Protocol {
			return false
		}
	}
	return true
}

// recordEdges records an event when the job enters a phase, or becomes blocked.
func (c *Controller) recordEdges(job *v1.TrainingJob, status v1.TrainingJobStatus) {
	if status.Phase != job.Status.Phase {
		key := job.Namespace + "/" + job.Name
		switch status.Phase {
		case v1.PhaseRunning:
			c.recorder.Event(job, corev1.EventTypeNormal, v1.EventRunning, status.Message)
		case v1.PhaseSucceeded:
			c.log.Info("job succeeded", "job", key, "reason", status.Reason, "message", status.Message)
			c.recorder.Event(job, corev1.EventTypeNormal, v1.EventSucceeded, status.Message+"; every ReplicaSet is scaled to 0")
		case v1.PhaseFailed:
			c.log.Warn("job failed", "job", key, "reason", status.Reason, "message", status.Message)
			c.recorder.Event(job, corev1.EventTypeWarning, v1.EventFailed, status.Message)
		}
	}
	if isTrue(status.Conditions, v1.ConditionBlocked) && !isTrue(job.Status.Conditions, v1.ConditionBlocked) {
		c.log.Warn("job blocked by a foreign object", "job", job.Namespace+"/"+job.Name, "message", status.Message)
		c.recorder.Event(job, corev1.EventTypeWarning, v1.EventBlocked, status.Message)
	}
}

func isTrue(conditions []metav1.Condition, kind string) bool {
	for _, c := range conditions {
		if c.Type == kind {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
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
	setConditions(&status, job.Generation, verdict{v1.PhaseFailed, v1.ReasonInvalid, message}, nil)
	written, err := c.writeStatus(ctx, job, status)
	if written {
		c.log.Warn("invalid job", "job", job.Namespace+"/"+job.Name, "err", message)
		c.recorder.Event(job, corev1.EventTypeWarning, v1.ReasonInvalid, message)
	}
	return err
}

// writeStatus writes the status subresource, only when it changed, and
// reports whether it wrote.
func (c *Controller) writeStatus(ctx context.Context, job *v1.TrainingJob, status v1.TrainingJobStatus) (bool, error) {
	if equality.Semantic.DeepEqual(job.Status, status) {
		return false, nil
	}
	update := job.DeepCopy()
	update.Status = status
	_, err := c.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("update status of %s/%s: %w", job.Namespace, job.Name, err)
	}
	return true, nil
}
