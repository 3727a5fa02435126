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

// Options configures a Snapshot.
type Options struct {
	// Logger receives the debug line of every InquiryResource; nil discards.
	Logger log15.Logger
	// GPUResourceNames are the extended resources counted as GPUs; empty
	// means just DefaultGPUResourceName.
	GPUResourceNames []corev1.ResourceName
}

// Snapshot aggregates pod and node informer events into the cluster's
// capacity and load. Its event handlers are O(1) per event (a few map
// operations under a mutex), and InquiryResource is O(nodes + pending pods +
// trainer pods); nothing ever lists the cluster.
type Snapshot struct {
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

// nodeState is what the snapshot knows about one node name. It exists as long
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

// New returns a Snapshot fed by the given informers. It only registers event
// handlers; the caller starts the informers (after installing TransformPod)
// and waits for HasSynced before trusting InquiryResource.
func New(podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, opts Options) (*Snapshot, error) {
	if podInformer == nil || nodeInformer == nil {
		return nil, errors.New("cluster snapshot needs a pod and a node informer")
	}
	s := newSnapshot(opts)
	podReg, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onPod,
		UpdateFunc: func(_, obj interface{}) { s.onPod(obj) },
		DeleteFunc: s.onPodDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("register pod event handler: %w", err)
	}
	nodeReg, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onNode,
		UpdateFunc: func(_, obj interface{}) { s.onNode(obj) },
		DeleteFunc: s.onNodeDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("register node event handler: %w", err)
	}
	// The registrations' HasSynced, unlike the informers', also waits until
	// our handlers have seen every object of the initial list.
	s.synced = []cache.InformerSynced{
		podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced,
		podReg.HasSynced, nodeReg.HasSynced,
	}
	return s, nil
}

func newSnapshot(opts Options) *Snapshot {
	log := opts.Logger
	if log == nil {
		log = log15.New()
		log.SetHandler(log15.DiscardHandler())
	}
	gpus := opts.GPUResourceNames
	if len(gpus) == 0 {
		gpus = []corev1.ResourceName{DefaultGPUResourceName}
	}
	return &Snapshot{
		log:         log,
		reader:      resourceReader{gpuNames: append([]corev1.ResourceName(nil), gpus...)},
		nodes:       map[string]*nodeState{},
		pods:        map[string]*podRecord{},
		pending:     map[string]*podRecord{},
		terminating: map[string]*podRecord{},
		trainers:    map[string][]*podRecord{},
	}
}

// HasSynced reports whether both informers have synced and the snapshot has
// processed their initial lists; use it with cache.WaitForCacheSync.
func (s *Snapshot) HasSynced() bool {
	for _, f := range s.synced {
		if !f() {
			return false
		}
	}
	return true
}

func (s *Snapshot) onPod(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rec := s.newPodRecord(pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.pods[rec.key]
	if old == nil {
		s.pods[rec.key] = rec
		s.applyLocked(rec)
		s.addTrainerLocked(rec)
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
		s.removeTrainerLocked(old)
	}
	s.unapplyLocked(old)
	*old = *rec
	s.applyLocked(old)
	if !stays {
		s.addTrainerLocked(old)
	}
}

func (s *Snapshot) onPodDelete(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.pods[key]; old != nil {
		s.removeTrainerLocked(old)
		s.unapplyLocked(old)
		delete(s.pods, key)
	}
}

func (s *Snapshot) newPodRecord(pod *corev1.Pod) *podRecord {
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
	rec.req, rec.lim = s.reader.podRequestsAndLimits(&pod.Spec)
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

func (s *Snapshot) applyLocked(r *podRecord) {
	if !r.live {
		return
	}
	s.requested.add(r.req)
	s.limits.add(r.lim)
	if r.node != "" {
		n := s.nodes[r.node]
		if n == nil {
			n = &nodeState{}
			s.nodes[r.node] = n
		}
		n.requested.add(r.req)
		n.pods++
	}
	if r.unschedulable {
		s.pending[r.key] = r
	}
	if r.job != "" && r.terminating {
		s.terminating[r.key] = r
	}
}

func (s *Snapshot) unapplyLocked(r *podRecord) {
	if !r.live {
		return
	}
	s.requested.sub(r.req)
	s.limits.sub(r.lim)
	if r.node != "" {
		if n := s.nodes[r.node]; n != nil {
			n.requested.sub(r.req)
			n.pods--
			if !n.present && n.pods == 0 {
				delete(s.nodes, r.node)
			}
		}
	}
	if r.unschedulable {
		delete(s.pending, r.key)
	}
	if r.job != "" && r.terminating {
		delete(s.terminating, r.key)
	}
}

// trainer reports whether the pod belongs in its job's trainer list.
func (r *podRecord) trainer() bool { return r.live && r.job != "" && !r.terminating }

func (s *Snapshot) addTrainerLocked(r *podRecord) {
	if !r.trainer() {
		return
	}
	pods := s.trainers[r.job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); !found {
		s.trainers[r.job] = slices.Insert(pods, i, r)
	}
}

func (s *Snapshot) removeTrainerLocked(r *podRecord) {
	if !r.trainer() {
		return
	}
	pods := s.trainers[r.job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); found {
		pods = slices.Delete(pods, i, i+1)
		if len(pods) == 0 {
			delete(s.trainers, r.job)
		} else {
			s.trainers[r.job] = pods
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

func (s *Snapshot) onNode(obj interface{}) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	alloc := s.reader.read(node.Status.Allocatable)
	counted := !node.Spec.Unschedulable && nodeReady(node)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[node.Name]
	if n == nil {
		n = &nodeState{}
		s.nodes[node.Name] = n
	} else if n.present && n.rv == node.ResourceVersion && node.ResourceVersion != "" {
		return
	}
	s.uncountLocked(n)
	n.present, n.rv, n.alloc, n.counted = true, node.ResourceVersion, alloc, counted
	if n.counted {
		s.total.add(n.alloc)
		s.nodeCount++
	}
}

func (s *Snapshot) onNodeDelete(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[key]
	if n == nil {
		return
	}
	s.uncountLocked(n)
	n.present, n.rv, n.alloc = false, "", amounts{}
	if n.pods == 0 {
		delete(s.nodes, key)
	}
}

func (s *Snapshot) uncountLocked(n *nodeState) {
	if n.counted {
		s.total.sub(n.alloc)
		s.nodeCount--
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
// original EDL's format (see ClusterResource.String). The lock is held only
// while copying; sorting the pending pods and formatting the log line happen
// after it is released so that event handlers are not stalled.
func (s *Snapshot) InquiryResource() ClusterResource {
	s.mu.Lock()
	r := ClusterResource{
		NodeCount:         s.nodeCount,
		GPURequest:        s.requested.gpu,
		GPULimit:          s.limits.gpu,
		GPUTotal:          s.total.gpu,
		CPURequestMilli:   s.requested.cpuMilli,
		CPULimitMilli:     s.limits.cpuMilli,
		CPUTotalMilli:     s.total.cpuMilli,
		MemoryRequestMega: floorDiv(s.requested.memBytes, mebi),
		MemoryLimitMega:   floorDiv(s.limits.memBytes, mebi),
		MemoryTotalMega:   floorDiv(s.total.memBytes, mebi),
		Nodes: NodeResources{
			NodesCPUIdleMilli:   make(map[string]int64, s.nodeCount),
			NodesMemoryFreeMega: make(map[string]int64, s.nodeCount),
			NodesGPUFree:        make(map[string]int64, s.nodeCount),
		},
		Pending:  make([]PendingPod, 0, len(s.pending)),
		Trainers: make(map[string][]TrainerPod, len(s.trainers)),
	}
	for _, p := range s.terminating {
		r.TerminatingTrainers = append(r.TerminatingTrainers, p.deletion)
	}
	for name, n := range s.nodes {
		if !n.counted {
			continue
		}
		idle := n.alloc
		idle.sub(n.requested)
		r.Nodes.NodesCPUIdleMilli[name] = idle.cpuMilli
		r.Nodes.NodesMemoryFreeMega[name] = floorDiv(idle.memBytes, mebi)
		r.Nodes.NodesGPUFree[name] = idle.gpu
	}
	for _, p := range s.pending {
		r.Pending = append(r.Pending, PendingPod{
			Namespace: p.namespace, Name: p.name, Priority: p.priority,
			Request: p.request, Job: p.member, Trainer: p.job != "", Created: p.created, NominatedNode: p.nominated,
		})
	}
	for job, pods := range s.trainers {
		list := make([]TrainerPod, 0, len(pods))
		for _, p := range pods {
			list = append(list, TrainerPod{
				Name: p.name, Node: p.node, Phase: p.phase, Unschedulable: p.unschedulable,
				Created: p.created, Request: p.request,
			})
		}
		r.Trainers[job] = list
	}
	s.mu.Unlock()

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
	s.log.Debug("Cluster.InquiryResource done", "resource", log15.Lazy{Fn: func() string { return fmt.Sprintf("%+v", r) }})
	return r
}
