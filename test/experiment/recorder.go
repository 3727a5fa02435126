package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
	tjlisters "github.com/paddlepaddle/edl/pkg/generated/listers/paddlepaddle/v1"
)

// ClientConfig returns a copy of cfg with a client-side rate limit high
// enough for the experiments' bursts of creates and lists: client-go's
// default of 5 requests per second would make the tools, not the cluster,
// the bottleneck.
func ClientConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 200, 400
	c.UserAgent = "edl-experiment"
	return c
}

// JobTiming is when one job was submitted and started.
type JobTiming struct {
	Name      string
	Submitted time.Duration
	// FirstTrainer is when a trainer pod of the job was first seen Running;
	// Running when the job's phase was first Running (pservers ready and
	// min-instance trainers Running). Negative: not (yet).
	FirstTrainer, Running time.Duration
}

// PodWait is how long one web pod waited for a node.
type PodWait struct {
	Name    string
	Created time.Duration
	// Running is when it was first seen Running; negative if never.
	Running time.Duration
	// Deleted is when it was deleted; negative if it was not.
	Deleted time.Duration
}

// Recorder watches the cluster through informers and records samples and
// timings relative to its origin.
type Recorder struct {
	origin time.Time

	kubeInformers informers.SharedInformerFactory
	jobInformers  tjinformers.SharedInformerFactory
	pods          corelisters.PodLister
	nodes         corelisters.NodeLister
	jobs          tjlisters.TrainingJobLister
	queues        tjlisters.TrainingQueueLister // nil unless WatchQueues
	synced        []cache.InformerSynced

	mu           sync.Mutex
	submitted    map[string]time.Duration
	firstTrainer map[string]time.Duration
	running      map[string]time.Duration
	web          map[string]*PodWait
	webDesired   int
	growth       *growth
	// trainerUp are the trainers seen Running and not stopping yet;
	// stopped counts the Running trainers that were deleted since.
	trainerUp map[types.UID]bool
	stopped   int
	// teams names the team of each namespace (Teams; SetTeams); deleted
	// are the jobs the scenario deleted (they ended), removed counts the
	// Running trainers deleted while their job was not, phase is each
	// job's last phase seen and stoppedWhole the jobs seen going from
	// Running back to Queued (preempted whole), with when.
	teams        map[string]string
	deleted      map[string]bool
	removed      int
	phase        map[string]v1.TrainingJobPhase
	stoppedWhole []JobEvent
}

// JobEvent is something that happened to a job, and when.
type JobEvent struct {
	Job string
	At  time.Duration
}

// NewRecorder watches every pod and node and the TrainingJobs of namespace
// ("" for all) with cfg.
func NewRecorder(cfg *rest.Config, namespace string) (*Recorder, error) {
	cfg = ClientConfig(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	tj, err := tjclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &Recorder{
		origin:        time.Now(),
		kubeInformers: informers.NewSharedInformerFactory(kube, 0),
		jobInformers:  tjinformers.NewSharedInformerFactoryWithOptions(tj, 0, tjinformers.WithNamespace(namespace)),
		submitted:     map[string]time.Duration{},
		firstTrainer:  map[string]time.Duration{},
		running:       map[string]time.Duration{},
		web:           map[string]*PodWait{},
		growth:        newGrowth(),
		trainerUp:     map[types.UID]bool{},
		deleted:       map[string]bool{},
		phase:         map[string]v1.TrainingJobPhase{},
	}
	pods := r.kubeInformers.Core().V1().Pods()
	nodes := r.kubeInformers.Core().V1().Nodes()
	jobs := r.jobInformers.Paddlepaddle().V1().TrainingJobs()
	r.pods, r.nodes, r.jobs = pods.Lister(), nodes.Lister(), jobs.Lister()
	r.synced = []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced, jobs.Informer().HasSynced}

	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observePod(obj, false) },
		UpdateFunc: func(_, obj any) { r.observePod(obj, false) },
		DeleteFunc: func(obj any) { r.observePod(obj, true) },
	}); err != nil {
		return nil, err
	}
	replicaSets := r.kubeInformers.Apps().V1().ReplicaSets()
	r.synced = append(r.synced, replicaSets.Informer().HasSynced)
	if _, err := replicaSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.observeReplicaSet,
		UpdateFunc: func(_, obj any) { r.observeReplicaSet(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.observeJob,
		UpdateFunc: func(_, obj any) { r.observeJob(obj) },
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// WatchQueues makes the recorder watch the TrainingQueues too, for the
// deserved share EDL gives each team (TeamSample.DeservedMilli); call it
// before Start.
func (r *Recorder) WatchQueues() {
	queues := r.jobInformers.Paddlepaddle().V1().TrainingQueues()
	r.queues = queues.Lister()
	r.synced = append(r.synced, queues.Informer().HasSynced)
}

// Start runs the informers until ctx is done and waits for their caches.
func (r *Recorder) Start(ctx context.Context) error {
	r.kubeInformers.Start(ctx.Done())
	r.jobInformers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), r.synced...) {
		return fmt.Errorf("the recorder's caches did not sync")
	}
	return nil
}

// Shutdown waits for the informers to stop: cancel the context given to
// Start first.
func (r *Recorder) Shutdown() {
	r.kubeInformers.Shutdown()
	r.jobInformers.Shutdown()
}

// ResetOrigin makes now the origin of every later time.
func (r *Recorder) ResetOrigin(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.origin = now
}

// Since returns the time from the origin to t.
func (r *Recorder) Since(t time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return t.Sub(r.origin)
}

// Submitted records that the job name was submitted at t.
func (r *Recorder) Submitted(name string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.submitted[name] = t.Sub(r.origin)
}

// SetWebDesired records the web Deployment's replicas, for the samples.
func (r *Recorder) SetWebDesired(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.webDesired = n
}

func (r *Recorder) observePod(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	at := now.Sub(r.origin)
	running := pod.Status.Phase == corev1.PodRunning && !deleted
	if job := pod.Labels[v1.LabelTrainer]; job != "" {
		if _, seen := r.firstTrainer[job]; running && !seen {
			r.firstTrainer[job] = at
		}
		stopping := deleted || pod.DeletionTimestamp != nil
		r.growth.pod(pod.UID, pod.Name, job, pod.Spec.NodeSelector[PoolLabel], pod.Spec.NodeName != "", stopping, at)
		switch {
		case stopping && r.trainerUp[pod.UID]:
			r.stopped++
			if !r.deleted[job] {
				r.removed++
			}
			delete(r.trainerUp, pod.UID)
		case running && !stopping:
			r.trainerUp[pod.UID] = true
		case !stopping:
			delete(r.trainerUp, pod.UID) // finished, not stopped
		}
	}
	if pod.Labels[WebLabel] != WebName {
		return
	}
	w := r.web[string(pod.UID)]
	if w == nil {
		w = &PodWait{Name: pod.Name, Created: at, Running: -1, Deleted: -1}
		r.web[string(pod.UID)] = w
	}
	if running && w.Running < 0 {
		w.Running = at
	}
	if (deleted || pod.DeletionTimestamp != nil) && w.Deleted < 0 {
		w.Deleted = at
	}
}

// TrainersStopped counts the trainers that were seen Running and then
// deleted (by edl's scale-downs or kube-scheduler's preemptions) so far.
func (r *Recorder) TrainersStopped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// observeReplicaSet feeds the trainer ReplicaSets' replicas to growth.
func (r *Recorder) observeReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok || rs.Spec.Replicas == nil {
		return
	}
	job := rs.Labels[v1.LabelTrainer]
	if job == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.growth.scaled(job, *rs.Spec.Replicas)
}

func (r *Recorder) observeJob(obj any) {
	job, ok := obj.(*v1.TrainingJob)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.phase[job.Name]
	r.phase[job.Name] = job.Status.Phase
	if prev == v1.PhaseRunning && job.Status.Phase == v1.PhaseQueued && !r.deleted[job.Name] && job.DeletionTimestamp == nil {
		r.stoppedWhole = append(r.stoppedWhole, JobEvent{Job: job.Name, At: now.Sub(r.origin)})
	}
	if job.Status.Phase != v1.PhaseRunning {
		return
	}
	if _, seen := r.running[job.Name]; !seen {
		r.running[job.Name] = now.Sub(r.origin)
	}
}

// SetTeams names the team of each namespace: the samples then hold each
// team's use and demand (Sample.Teams).
func (r *Recorder) SetTeams(byNamespace map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.teams = byNamespace
}

// Deleted records that the scenario deleted the job (it ended): its
// trainers stopped from now on are not counted as removed.
func (r *Recorder) Deleted(job string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted[job] = true
}

// TrainersRemoved counts the trainers that were seen Running and then
// deleted while their job was not (scale-downs, preemptions).
func (r *Recorder) TrainersRemoved() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed
}

// StoppedWhole are the jobs seen going from Running back to Queued while
// they were not deleted: preempted whole.
func (r *Recorder) StoppedWhole() []JobEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stoppedWhole)
}

// JobTimings returns every submitted job's timing, by name.
func (r *Recorder) JobTimings() []JobTiming {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []JobTiming
	for name, sub := range r.submitted {
		t := JobTiming{Name: name, Submitted: sub, FirstTrainer: -1, Running: -1}
		if at, ok := r.firstTrainer[name]; ok {
			t.FirstTrainer = at
		}
		if at, ok := r.running[name]; ok {
			t.Running = at
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b JobTiming) int { return int(a.Submitted - b.Submitted) })
	return out
}

// GrowthWaits returns the trainer pods EDL's growth added, in creation
// order, with how long each waited for a node.
func (r *Recorder) GrowthWaits() []TrainerWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.growth.list()
}

// WebWaits returns every web pod seen, in creation order.
func (r *Recorder) WebWaits() []PodWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	return inCreationOrder(r.web, func(w PodWait) (time.Duration, string) { return w.Created, w.Name })
}

// inCreationOrder copies the values of m sorted by their creation time,
// then name, as key returns them.
func inCreationOrder[K comparable, T any](m map[K]*T, key func(T) (time.Duration, string)) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b T) int {
		ca, na := key(a)
		cb, nb := key(b)
		if ca != cb {
			return int(ca - cb)
		}
		return strings.Compare(na, nb)
	})
	return out
}
