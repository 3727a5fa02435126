package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Config is what a Tracker reads and how it counts.
type Config struct {
	// PodInformer and NodeInformer feed the Tracker; both are required. The
	// pod informer may be shared (with the controller).
	PodInformer  coreinformers.PodInformer
	NodeInformer coreinformers.NodeInformer
	// Logger receives the debug line of every InquiryResource; nil discards.
	Logger log15.Logger
	// GPUResourceNames are the extended resources counted as GPUs; empty
	// means just DefaultGPUResourceName.
	GPUResourceNames []corev1.ResourceName
}

// Tracker aggregates pod and node informer events into the cluster's
// capacity and load, the live totals that InquiryResource copies into a
// Snapshot. Its event handlers are O(1) per event (a few map
// operations under a mutex), and InquiryResource is O(nodes + pending pods +
// trainer pods); nothing ever lists the cluster.
type Tracker struct {
	log    log15.Logger
	reader resourceReader
	synced []cache.InformerSynced

	mu      sync.Mutex
	nodes   map[string]*nodeState
	pods    map[string]*podRecord
	pending map[string]*podRecord
	// terminating are the trainer pods being deleted.
	terminating map[string]*podRecord
	trainers    map[string][]*podRecord // per job, oldest first: kept sorted, as both keys are immutable
	nodeCount   int
	total       amounts // allocatable of counted nodes
	requested   amounts // requests of live pods
	limits      amounts // limits of live pods
}

// nodeState is what the tracker knows about one node name. It exists as long
// as either the node is in the informer or live pods are bound to it: a pod can
// be seen before its node, and a node can be deleted before its pods, and in
// both cases the per-node request sum must stay exact for when they meet.
type nodeState struct {
	present   bool    // the node object is in the informer
	counted   bool    // Ready and not cordoned: counts toward totals and idle
	alloc     amounts // status.allocatable
	rv        string
	requested amounts // requests of live pods bound here
	pods      int     // live pods bound here
}

// podRecord is a pod's contribution to the aggregates, remembered so that the
// next event for the pod subtracts exactly what was added, whatever the old
// object the informer hands over.
type podRecord struct {
	key           string
	rv            string
	namespace     string
	name          string
	job           string // "namespace/job" for trainers
	member        string // "namespace/job" for every pod of a TrainingJob
	node          string
	phase         corev1.PodPhase
	live          bool // neither Succeeded nor Failed
	terminating   bool
	unschedulable bool
	nominated     string
	deletion      time.Time // metadata.deletionTimestamp: when the grace period ends
	priority      int32
	created       time.Time
	req, lim      amounts
	request       Resources // req in report units, memory rounded up
}

// New returns a Tracker fed by cfg's informers. It only registers event
// handlers; the caller starts the informers (after installing TransformPod)
// and waits for HasSynced before trusting InquiryResource.
func New(cfg Config) (*Tracker, error) {
	podInformer, nodeInformer := cfg.PodInformer, cfg.NodeInformer
	if podInformer == nil || nodeInformer == nil {
		return nil, errors.New("cluster snapshot needs a pod and a node informer")
	}
	t := newTracker(cfg)
	podReg, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.onPod,
		UpdateFunc: func(_, obj interface{}) { t.onPod(obj) },
		DeleteFunc: t.onPodDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("register pod event handler: %w", err)
	}
	nodeReg, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.onNode,
		UpdateFunc: func(_, obj interface{}) { t.onNode(obj) },
		DeleteFunc: t.onNodeDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("register node event handler: %w", err)
	}
	// The registrations' HasSynced, unlike the informers', also waits until
	// our handlers have seen every object of the initial list.
	t.synced = []cache.InformerSynced{
		podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced,
		podReg.HasSynced, nodeReg.HasSynced,
	}
	return t, nil
}

func newTracker(cfg Config) *Tracker {
	log := cfg.Logger
	if log == nil {
		log = log15.New()
		log.SetHandler(log15.DiscardHandler())
	}
	gpus := cfg.GPUResourceNames
	if len(gpus) == 0 {
		gpus = []corev1.ResourceName{DefaultGPUResourceName}
	}
	return &Tracker{
		log:         log,
		reader:      resourceReader{gpuNames: append([]corev1.ResourceName(nil), gpus...)},
		nodes:       map[string]*nodeState{},
		pods:        map[string]*podRecord{},
		pending:     map[string]*podRecord{},
		terminating: map[string]*podRecord{},
		trainers:    map[string][]*podRecord{},
	}
}

// HasSynced reports whether both informers have synced and the tracker has
// processed their initial lists; use it with cache.WaitForCacheSync.
func (t *Tracker) HasSynced() bool {
	for _, f := range t.synced {
		if !f() {
			return false
		}
	}
	return true
}

func (t *Tracker) onPod(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rec := t.newPodRecord(pod)
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.pods[rec.key]
	if old == nil {
		t.pods[rec.key] = rec
		t.applyLocked(rec)
		t.addTrainerLocked(rec)
		return
	}
	if old.rv == rec.rv && rec.rv != "" {
		return // a resync: nothing changed
	}
	// The record keeps its address: the job's sorted trainer slice points at
	// it, so an update that leaves the pod where it was in that order (nearly
	// all of them: phase, node, conditions) needs no search.
	stays := old.trainer() && rec.trainer() && old.job == rec.job && old.created.Equal(rec.created)
	if !stays {
		t.removeTrainerLocked(old)
	}
	t.unapplyLocked(old)
	*old = *rec
	t.applyLocked(old)
	if !stays {
		t.addTrainerLocked(old)
	}
}

func (t *Tracker) onPodDelete(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.pods[key]; old != nil {
		t.removeTrainerLocked(old)
		t.unapplyLocked(old)
		delete(t.pods, key)
	}
}

func (t *Tracker) newPodRecord(pod *corev1.Pod) *podRecord {
	rec := &podRecord{
		key:         pod.Namespace + "/" + pod.Name,
		rv:          pod.ResourceVersion,
		namespace:   pod.Namespace,
		name:        pod.Name,
		node:        pod.Spec.NodeName,
		phase:       pod.Status.Phase,
		live:        pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed,
		terminating: pod.DeletionTimestamp != nil,
		created:     pod.CreationTimestamp.Time,
		nominated:   pod.Status.NominatedNodeName,
	}
	if pod.DeletionTimestamp != nil {
		rec.deletion = pod.DeletionTimestamp.Time
	}
	if job, role, ok := v1.JobOf(pod.Labels); ok {
		rec.member = pod.Namespace + "/" + job
		if role == v1.RoleTrainer {
			rec.job = rec.member
		}
	}
	if pod.Spec.Priority != nil {
		rec.priority = *pod.Spec.Priority
	}
	rec.unschedulable = rec.live && rec.phase == corev1.PodPending && rec.node == "" && unschedulable(pod)
	rec.req, rec.lim = t.reader.podRequestsAndLimits(&pod.Spec)
	rec.request = rec.req.ceilResources()
	return rec
}

func unschedulable(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

func (t *Tracker) applyLocked(r *podRecord) {
	if !r.live {
		return
	}
	t.requested.add(r.req)
	t.limits.add(r.lim)
	if r.node != "" {
		n := t.nodes[r.node]
		if n == nil {
			n = &nodeState{}
			t.nodes[r.node] = n
		}
		n.requested.add(r.req)
		n.pods++
	}
	if r.unschedulable {
		t.pending[r.key] = r
	}
	if r.job != "" && r.terminating {
		t.terminating[r.key] = r
	}
}

func (t *Tracker) unapplyLocked(r *podRecord) {
	if !r.live {
		return
	}
	t.requested.sub(r.req)
	t.limits.sub(r.lim)
	if r.node != "" {
		if n := t.nodes[r.node]; n != nil {
			n.requested.sub(r.req)
			n.pods--
			if !n.present && n.pods == 0 {
				delete(t.nodes, r.node)
			}
		}
	}
	if r.unschedulable {
		delete(t.pending, r.key)
	}
	if r.job != "" && r.terminating {
		delete(t.terminating, r.key)
	}
}

// trainer reports whether the pod belongs in its job's trainer list.
func (r *podRecord) trainer() bool { return r.live && r.job != "" && !r.terminating }

func (t *Tracker) addTrainerLocked(r *podRecord) {
	if !r.trainer() {
		return
	}
	pods := t.trainers[r.job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); !found {
		t.trainers[r.job] = slices.Insert(pods, i, r)
	}
}

func (t *Tracker) removeTrainerLocked(r *podRecord) {
	if !r.trainer() {
		return
	}
	pods := t.trainers[r.job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); found {
		pods = slices.Delete(pods, i, i+1)
		if len(pods) == 0 {
			delete(t.trainers, r.job)
		} else {
			t.trainers[r.job] = pods
		}
	}
}

// olderRecord orders a job's trainers by creation, then name; a pod keeps
// both for life, so a sorted slice stays sorted across updates.
func olderRecord(a, b *podRecord) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func (t *Tracker) onNode(obj interface{}) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	alloc := t.reader.read(node.Status.Allocatable)
	counted := !node.Spec.Unschedulable && nodeReady(node)
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[node.Name]
	if n == nil {
		n = &nodeState{}
		t.nodes[node.Name] = n
	} else if n.present && n.rv == node.ResourceVersion && node.ResourceVersion != "" {
		return
	}
	t.uncountLocked(n)
	n.present, n.rv, n.alloc, n.counted = true, node.ResourceVersion, alloc, counted
	if n.counted {
		t.total.add(n.alloc)
		t.nodeCount++
	}
}

func (t *Tracker) onNodeDelete(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[key]
	if n == nil {
		return
	}
	t.uncountLocked(n)
	n.present, n.rv, n.alloc = false, "", amounts{}
	if n.pods == 0 {
		delete(t.nodes, key)
	}
}

func (t *Tracker) uncountLocked(n *nodeState) {
	if n.counted {
		t.total.sub(n.alloc)
		t.nodeCount--
		n.counted = false
	}
}

func nodeReady(node *corev1.Node) bool {
	for i := range node.Status.Conditions {
		if c := &node.Status.Conditions[i]; c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// InquiryResource returns a deep copy of the current aggregates: the caller
// owns every map and slice in it. It logs the result at debug level in the
// original EDL's format (see Snapshot.String). The lock is held only
// while copying; sorting the pending pods and formatting the log line happen
// after it is released so that event handlers are not stalled.
func (t *Tracker) InquiryResource() Snapshot {
	t.mu.Lock()
	r := Snapshot{
		NodeCount:         t.nodeCount,
		GPURequest:        t.requested.gpu,
		GPULimit:          t.limits.gpu,
		GPUTotal:          t.total.gpu,
		CPURequestMilli:   t.requested.cpuMilli,
		CPULimitMilli:     t.limits.cpuMilli,
		CPUTotalMilli:     t.total.cpuMilli,
		MemoryRequestMega: floorDiv(t.requested.memBytes, mebi),
		MemoryLimitMega:   floorDiv(t.limits.memBytes, mebi),
		MemoryTotalMega:   floorDiv(t.total.memBytes, mebi),
		Nodes: NodeResources{
			NodesCPUIdleMilli:   make(map[string]int64, t.nodeCount),
			NodesMemoryFreeMega: make(map[string]int64, t.nodeCount),
			NodesGPUFree:        make(map[string]int64, t.nodeCount),
		},
		Pending:  make([]PendingPod, 0, len(t.pending)),
		Trainers: make(map[string][]TrainerPod, len(t.trainers)),
	}
	for _, p := range t.terminating {
		r.TerminatingTrainers = append(r.TerminatingTrainers, p.deletion)
	}
	for name, n := range t.nodes {
		if !n.counted {
			continue
		}
		idle := n.alloc
		idle.sub(n.requested)
		r.Nodes.NodesCPUIdleMilli[name] = idle.cpuMilli
		r.Nodes.NodesMemoryFreeMega[name] = floorDiv(idle.memBytes, mebi)
		r.Nodes.NodesGPUFree[name] = idle.gpu
	}
	for _, p := range t.pending {
		r.Pending = append(r.Pending, PendingPod{
			Namespace: p.namespace, Name: p.name, Priority: p.priority,
			Request: p.request, Job: p.member, Trainer: p.job != "", Created: p.created, NominatedNode: p.nominated,
		})
	}
	for job, pods := range t.trainers {
		list := make([]TrainerPod, 0, len(pods))
		for _, p := range pods {
			list = append(list, TrainerPod{
				Name: p.name, Node: p.node, Phase: p.phase, Unschedulable: p.unschedulable,
				Created: p.created, Request: p.request,
			})
		}
		r.Trainers[job] = list
	}
	t.mu.Unlock()

	slices.SortFunc(r.Pending, func(a, b PendingPod) int {
		if a.Priority != b.Priority {
			return cmp.Compare(b.Priority, a.Priority)
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	// Formatting per-node maps of thousands of nodes is costly, so it is
	// deferred: log15's stream handlers evaluate a Lazy value only when the
	// record passes the level filter, and then print exactly
	// fmt.Sprintf("%+v", r).
	t.log.Debug("Cluster.InquiryResource done", "resource", log15.Lazy{Fn: func() string { return fmt.Sprintf("%+v", r) }})
	return r
}
