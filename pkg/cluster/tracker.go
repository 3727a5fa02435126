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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// QuotaInformer, when set, feeds the namespaces' ResourceQuotas.
	QuotaInformer coreinformers.ResourceQuotaInformer
	// Logger receives the debug line of every InquiryResource; nil discards.
	Logger log15.Logger
	// GPUResourceNames are the extended resources counted as GPUs; empty
	// means just DefaultGPUResourceName.
	GPUResourceNames []corev1.ResourceName
}

// Tracker aggregates pod and node informer events into the cluster's
// capacity and load, the live totals that InquiryResource copies into a
// Snapshot. Its event handlers are O(1) per event (a few map
// operations under a mutex), and InquiryResource is proportional to what
// changed since the previous one: it builds anew only the nodes, jobs and
// lists events touched and shares the rest with the previous Snapshot.
// Nothing ever lists the cluster.
type Tracker struct {
	log    log15.Logger
	reader resourceReader
	synced []cache.InformerSynced

	// snapMu serialises InquiryResource: it guards last and nodeIndex,
	// which only InquiryResource reads and writes.
	snapMu sync.Mutex
	// last is the Snapshot InquiryResource returned last time, nil before
	// the first; the next one shares with it whatever did not change.
	last *Snapshot
	// nodeIndex is each node's index in last.Nodes.
	nodeIndex map[string]int

	mu sync.Mutex
	// What changed since last, for InquiryResource to rebuild: the nodes
	// and jobs events touched, and whether the pending pods or the quotas
	// changed. Nothing is ever written into a Snapshot handed out.
	dirtyNodes   map[string]struct{}
	dirtyJobs    map[string]struct{}
	dirtyPending bool
	dirtyQuotas  bool

	nodes     map[string]*nodeState
	pods      map[string]*podRecord
	pending   map[string]*podRecord
	unplaced  map[string]*podRecord   // job pods not bound and not (yet) unschedulable
	trainers  map[string][]*podRecord // per job, oldest first: kept sorted, as both keys are immutable
	quotas    map[string]map[string]Quota
	nodeCount int
	// The totals are over the counted nodes only, the requests and limits
	// too, so that the load's numerator and denominator agree: a cordoned
	// or NotReady node takes its pods' requests out with its allocatable.
	total     amounts // allocatable of counted nodes
	requested amounts // requests of live pods bound to counted nodes
	limits    amounts // limits of live pods bound to counted nodes
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
	labels    map[string]string
	taints    []corev1.Taint // NoSchedule and NoExecute only
	requested amounts        // requests of live pods bound here
	limits    amounts        // limits of live pods bound here
	pods      int            // live pods bound here
	// terminating are the live pods bound here that are being deleted.
	terminating map[string]*podRecord
}

// podRecord is a pod's contribution to the aggregates, remembered so that the
// next event for the pod subtracts exactly what was added, whatever the old
// object the informer hands over.
type podRecord struct {
	key       string
	rv        string
	namespace string
	name      string
	// job is "namespace/job" for trainers, member for every pod of a
	// TrainingJob: labelled with the job's name and controlled by the job's
	// ReplicaSet of the pod's role. A pod that only carries the label is
	// not the job's.
	job           string
	member        string
	node          string
	phase         corev1.PodPhase
	live          bool // neither Succeeded nor Failed
	terminating   bool
	unschedulable bool
	unplaced      bool // a job's pod, live, not bound, not unschedulable, not being deleted
	nominated     string
	deletion      time.Time // metadata.deletionTimestamp: when the grace period ends
	priority      int32
	created       time.Time
	req, lim      amounts
	request       Resources // req in report units, memory rounded up
	limit         Resources // lim in report units, memory rounded up
	// placement and preemptNever are kept for unschedulable and unplaced
	// pods only.
	placement    *Placement
	preemptNever bool
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
	if qi := cfg.QuotaInformer; qi != nil {
		quotaReg, err := qi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    t.onQuota,
			UpdateFunc: func(_, obj interface{}) { t.onQuota(obj) },
			DeleteFunc: t.onQuotaDelete,
		})
		if err != nil {
			return nil, fmt.Errorf("register ResourceQuota event handler: %w", err)
		}
		t.synced = append(t.synced, qi.Informer().HasSynced, quotaReg.HasSynced)
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
		log:      log,
		reader:   resourceReader{gpuNames: append([]corev1.ResourceName(nil), gpus...)},
		nodes:    map[string]*nodeState{},
		pods:     map[string]*podRecord{},
		pending:  map[string]*podRecord{},
		unplaced: map[string]*podRecord{},
		trainers: map[string][]*podRecord{},
		quotas:   map[string]map[string]Quota{},

		dirtyNodes: map[string]struct{}{},
		dirtyJobs:  map[string]struct{}{},
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
	if stays {
		t.dirtyJobs[old.job] = struct{}{}
	} else {
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
	if job, role, ok := v1.JobOf(pod.Labels); ok && controlledByJob(pod, job, role) {
		rec.member = pod.Namespace + "/" + job
		if role == v1.RoleTrainer {
			rec.job = rec.member
		}
	}
	if pod.Spec.Priority != nil {
		rec.priority = *pod.Spec.Priority
	}
	rec.unschedulable = rec.live && rec.phase == corev1.PodPending && rec.node == "" && unschedulable(pod)
	rec.unplaced = rec.member != "" && rec.live && rec.node == "" && !rec.unschedulable && !rec.terminating
	if rec.unschedulable || rec.unplaced {
		rec.placement = PlacementOf(&pod.Spec)
		rec.preemptNever = pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever
	}
	rec.req, rec.lim = t.reader.podRequestsAndLimits(&pod.Spec)
	rec.request, rec.limit = rec.req.ceilResources(), rec.lim.ceilResources()
	return rec
}

// controlledByJob reports whether the pod's controller is the job's
// ReplicaSet of the role its label names.
func controlledByJob(pod *corev1.Pod, job string, role v1.Role) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && ref.Kind == "ReplicaSet" && ref.Name == v1.ReplicaSetName(job, role)
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
	if r.node != "" {
		n := t.nodes[r.node]
		if n == nil {
			n = &nodeState{}
			t.nodes[r.node] = n
		}
		t.dirtyNodes[r.node] = struct{}{}
		n.requested.add(r.req)
		n.limits.add(r.lim)
		n.pods++
		if n.counted {
			t.requested.add(r.req)
			t.limits.add(r.lim)
		}
		if r.terminating {
			if n.terminating == nil {
				n.terminating = map[string]*podRecord{}
			}
			n.terminating[r.key] = r
		}
	}
	if r.unschedulable {
		t.pending[r.key] = r
		t.dirtyPending = true
	}
	if r.unplaced {
		t.unplaced[r.key] = r
		t.dirtyPending = true
	}
}

func (t *Tracker) unapplyLocked(r *podRecord) {
	if !r.live {
		return
	}
	if r.node != "" {
		if n := t.nodes[r.node]; n != nil {
			t.dirtyNodes[r.node] = struct{}{}
			n.requested.sub(r.req)
			n.limits.sub(r.lim)
			n.pods--
			if n.counted {
				t.requested.sub(r.req)
				t.limits.sub(r.lim)
			}
			delete(n.terminating, r.key)
			if !n.present && n.pods == 0 {
				delete(t.nodes, r.node)
			}
		}
	}
	if r.unschedulable {
		delete(t.pending, r.key)
		t.dirtyPending = true
	}
	if r.unplaced {
		delete(t.unplaced, r.key)
		t.dirtyPending = true
	}
}

func (p *podRecord) pendingPod() PendingPod {
	return PendingPod{
		Namespace: p.namespace, Name: p.name, Priority: p.priority,
		Request: p.request, Job: p.member, Trainer: p.job != "", Created: p.created, NominatedNode: p.nominated,
		Placement: p.placement, PreemptNever: p.preemptNever,
	}
}

// queueOrder is the scheduling queue's: the highest priority first, then the
// oldest, then by namespace and name.
func queueOrder(a, b PendingPod) int {
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
		t.dirtyJobs[r.job] = struct{}{}
	}
}

func (t *Tracker) removeTrainerLocked(r *podRecord) {
	if !r.trainer() {
		return
	}
	pods := t.trainers[r.job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); found {
		t.dirtyJobs[r.job] = struct{}{}
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
	taints := schedulingTaints(node.Spec.Taints)
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[node.Name]
	if n == nil {
		n = &nodeState{}
		t.nodes[node.Name] = n
	} else if n.present && n.rv == node.ResourceVersion && node.ResourceVersion != "" {
		return
	}
	t.dirtyNodes[node.Name] = struct{}{}
	t.uncountLocked(n)
	n.present, n.rv, n.alloc, n.labels, n.taints = true, node.ResourceVersion, alloc, node.Labels, taints
	if counted {
		n.counted = true
		t.total.add(n.alloc)
		t.requested.add(n.requested)
		t.limits.add(n.limits)
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
	t.dirtyNodes[key] = struct{}{}
	t.uncountLocked(n)
	n.present, n.rv, n.alloc, n.labels, n.taints = false, "", amounts{}, nil, nil
	if n.pods == 0 {
		delete(t.nodes, key)
	}
}

func (t *Tracker) uncountLocked(n *nodeState) {
	if n.counted {
		t.total.sub(n.alloc)
		t.requested.sub(n.requested)
		t.limits.sub(n.limits)
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

// InquiryResource returns the current aggregates as a Snapshot. The
// Snapshot is read-only: it shares the nodes, jobs and lists that did not
// change with the previous and the next Snapshots, and the Tracker never
// writes into one it handed out, so a caller may read it without a lock for
// as long as it likes; a caller that wants to modify it takes DeepCopy.
// Only the nodes, jobs, pending pods and quotas that events touched since
// the previous call are built anew: when nothing changed, the call copies
// nothing but the totals.
//
// It logs the result at debug level in the original EDL's format (see
// Snapshot.String). The tracker's lock is held only while reading the
// changed parts; sorting and formatting the log line happen after it is
// released so that event handlers are not stalled.
func (t *Tracker) InquiryResource() Snapshot {
	t.snapMu.Lock()
	defer t.snapMu.Unlock()
	r, b := t.collect()
	// Only what collect built anew is sorted: the rest belongs to
	// Snapshots already handed out.
	for _, i := range b.nodes {
		sortTerminating(r.Nodes[i].Terminating)
	}
	if b.allNodes {
		slices.SortFunc(r.Nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
		t.nodeIndex = make(map[string]int, len(r.Nodes))
		for i := range r.Nodes {
			t.nodeIndex[r.Nodes[i].Name] = i
		}
	}
	if b.pending {
		sortPending(r.Pending)
		sortPending(r.Unplaced)
	}
	t.last = &r
	// Formatting per-node maps of thousands of nodes is costly, so it is
	// deferred: log15's stream handlers evaluate a Lazy value only when the
	// record passes the level filter, and then print exactly
	// fmt.Sprintf("%+v", r).
	t.log.Debug("Cluster.InquiryResource done", "resource", log15.Lazy{Fn: func() string { return fmt.Sprintf("%+v", r) }})
	return r
}

// built is what collect built anew rather than shared with the last
// Snapshot.
type built struct {
	// nodes are the indexes in Nodes of the nodes built anew; allNodes is
	// set when the set of counted nodes changed and all were, unsorted.
	nodes    []int
	allNodes bool
	pending  bool // Pending, unsorted
}

// collect builds the next Snapshot under the tracker's lock from the last
// one and what changed since, and forgets the changes.
func (t *Tracker) collect() (Snapshot, built) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	}
	last := t.last
	if last == nil {
		last = &Snapshot{}
		for _, m := range []map[string]struct{}{t.dirtyNodes, t.dirtyJobs} {
			clear(m)
		}
		for job := range t.trainers {
			t.dirtyJobs[job] = struct{}{}
		}
		t.dirtyPending, t.dirtyQuotas = true, true
	}
	var b built
	r.Nodes, b.nodes, b.allNodes = t.nodesLocked(last)
	r.Pending = last.Pending
	if t.dirtyPending {
		b.pending = true
		r.Pending = make([]PendingPod, 0, len(t.pending))
		for _, p := range t.pending {
			r.Pending = append(r.Pending, p.pendingPod())
		}
		r.Unplaced = nil // stays nil when empty, as a DeepCopy makes it
		for _, p := range t.unplaced {
			r.Unplaced = append(r.Unplaced, p.pendingPod())
		}
	} else {
		r.Unplaced = last.Unplaced
	}
	r.Trainers = last.Trainers
	if len(t.dirtyJobs) > 0 || r.Trainers == nil {
		r.Trainers = make(map[string][]TrainerPod, len(t.trainers))
		for job, list := range last.Trainers {
			if _, dirty := t.dirtyJobs[job]; !dirty {
				r.Trainers[job] = list
			}
		}
		for job := range t.dirtyJobs {
			if pods := t.trainers[job]; len(pods) > 0 {
				r.Trainers[job] = trainerPods(pods)
			}
		}
	}
	r.Quotas = last.Quotas
	if t.dirtyQuotas {
		r.Quotas = nil
		if len(t.quotas) > 0 {
			r.Quotas = make(map[string]Quota, len(t.quotas))
			for ns, qs := range t.quotas {
				left := NoQuota
				for _, q := range qs {
					left = left.tighter(q)
				}
				r.Quotas[ns] = left
			}
		}
	}
	clear(t.dirtyNodes)
	clear(t.dirtyJobs)
	t.dirtyPending, t.dirtyQuotas = false, false
	return r, b
}

// nodesLocked returns the counted nodes: last's slice when no node changed,
// a copy of it with the changed nodes built anew when the set of counted
// nodes is the same, else every node built anew (unsorted, and all is
// set). built are the indexes of the nodes built anew.
func (t *Tracker) nodesLocked(last *Snapshot) (nodes []Node, built []int, all bool) {
	if last.Nodes != nil && len(t.dirtyNodes) == 0 {
		return last.Nodes, nil, false
	}
	sameSet := last.Nodes != nil
	for name := range t.dirtyNodes {
		n := t.nodes[name]
		_, was := t.nodeIndex[name]
		if sameSet && (n != nil && n.counted) != was {
			sameSet = false
		}
	}
	if sameSet {
		nodes = slices.Clone(last.Nodes)
		built = make([]int, 0, len(t.dirtyNodes))
		for name := range t.dirtyNodes {
			if i, ok := t.nodeIndex[name]; ok {
				nodes[i] = t.nodes[name].snapshot(name)
				built = append(built, i)
			}
		}
		return nodes, built, false
	}
	nodes = make([]Node, 0, t.nodeCount)
	for name, n := range t.nodes {
		if n.counted {
			nodes = append(nodes, n.snapshot(name))
		}
	}
	built = make([]int, len(nodes))
	for i := range built {
		built[i] = i
	}
	return nodes, built, true
}

// snapshot is the node as a Snapshot reports it, Terminating unsorted.
func (n *nodeState) snapshot(name string) Node {
	free := n.alloc
	free.sub(n.requested)
	node := Node{Name: name, Labels: n.labels, Taints: n.taints, Allocatable: n.alloc.floorResources(),
		Free: free.floorResources()}
	for _, p := range n.terminating {
		node.Terminating = append(node.Terminating, TerminatingPod{Request: p.request, Deadline: p.deletion})
	}
	return node
}

func trainerPods(pods []*podRecord) []TrainerPod {
	list := make([]TrainerPod, 0, len(pods))
	for _, p := range pods {
		list = append(list, TrainerPod{
			Name: p.name, Node: p.node, Phase: p.phase, Unschedulable: p.unschedulable,
			Created: p.created, Request: p.request, Limits: p.limit, Priority: p.priority,
		})
	}
	return list
}

func sortTerminating(ts []TerminatingPod) {
	if len(ts) < 2 {
		return
	}
	slices.SortFunc(ts, func(a, b TerminatingPod) int {
		if c := a.Deadline.Compare(b.Deadline); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Request.CPUMilli, b.Request.CPUMilli),
			cmp.Compare(a.Request.MemoryMega, b.Request.MemoryMega), cmp.Compare(a.Request.GPU, b.Request.GPU))
	})
}

func sortPending(ps []PendingPod) {
	slices.SortFunc(ps, queueOrder)
}

func (t *Tracker) onQuota(obj interface{}) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return
	}
	left, modelled := t.reader.quotaLeft(q)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dirtyQuotas = true
	qs := t.quotas[q.Namespace]
	if !modelled {
		delete(qs, q.Name)
	} else {
		if qs == nil {
			qs = map[string]Quota{}
			t.quotas[q.Namespace] = qs
		}
		qs[q.Name] = left
	}
	if len(qs) == 0 {
		delete(t.quotas, q.Namespace)
	}
}

func (t *Tracker) onQuotaDelete(obj interface{}) {
	ns, name, err := namespaceAndName(obj)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dirtyQuotas = true
	if qs := t.quotas[ns]; qs != nil {
		delete(qs, name)
		if len(qs) == 0 {
			delete(t.quotas, ns)
		}
	}
}

func namespaceAndName(obj interface{}) (string, string, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", "", err
	}
	return cache.SplitMetaNamespaceKey(key)
}
