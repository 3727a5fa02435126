package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	nodeinformers "k8s.io/client-go/informers/node/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

const (
	// DefaultGPUResourceName is the extended resource counted as GPUs when
	// Config.GPUResourceNames is empty.
	DefaultGPUResourceName corev1.ResourceName = "nvidia.com/gpu"

	// mebi is the unit of every *Mega field: the original EDL printed
	// MemoryTotalMega:1993 for a 2 GiB minikube, i.e. bytes/1024/1024.
	mebi = 1 << 20
)

// Config is what a Tracker reads and how it counts.
type Config struct {
	// PodInformer and NodeInformer feed the Tracker; both are required. The
	// pod informer may be shared (with the controller).
	PodInformer  coreinformers.PodInformer
	NodeInformer coreinformers.NodeInformer
	// QuotaInformer, when set, feeds the namespaces' ResourceQuotas.
	QuotaInformer coreinformers.ResourceQuotaInformer
	// LimitRangeInformer and RuntimeClassInformer, when set, price a pod
	// template as the API server admits it (AdmittedPodRequestAndLimits):
	// with its namespace's LimitRange defaults and its RuntimeClass's
	// overhead. Unset, a template is priced as it is written.
	LimitRangeInformer   coreinformers.LimitRangeInformer
	RuntimeClassInformer nodeinformers.RuntimeClassInformer
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
	// limitRanges and runtimeClasses are nil without their informers.
	limitRanges    corelisters.LimitRangeLister
	quotaLister    corelisters.ResourceQuotaLister
	runtimeClasses nodelisters.RuntimeClassLister

	// snapMu serialises InquiryResource: it guards last and nodeIndex,
	// which only InquiryResource reads and writes.
	snapMu sync.Mutex
	// last is the Snapshot InquiryResource returned last time, nil before
	// the first; the next one shares with it whatever did not change.
	last *snapshot.Snapshot
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
	servers   map[string][]*podRecord // per job, its masters and pservers, in the same order
	quotas    map[string]map[string]quotaEntry
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
	untried       bool // a pod of no job, Pending, not bound, not being deleted, not tried by kube-scheduler yet
	nominated     string
	deletion      time.Time // metadata.deletionTimestamp: when the grace period ends
	priority      int32
	created       time.Time
	// req and lim are exact; a snapshot reports them in its units, memory
	// rounded up (ceilResources).
	req, lim amounts
	// placement and preemptNever are kept for unschedulable, unplaced and
	// untried pods only.
	placement    *snapshot.Placement
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
		t.quotaLister = qi.Lister()
	}
	if li := cfg.LimitRangeInformer; li != nil {
		t.limitRanges = li.Lister()
		t.synced = append(t.synced, li.Informer().HasSynced)
	}
	if ri := cfg.RuntimeClassInformer; ri != nil {
		t.runtimeClasses = ri.Lister()
		t.synced = append(t.synced, ri.Informer().HasSynced)
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
		servers:  map[string][]*podRecord{},
		quotas:   map[string]map[string]quotaEntry{},

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
	if r.unschedulable || r.untried {
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
	if r.unschedulable || r.untried {
		delete(t.pending, r.key)
		t.dirtyPending = true
	}
	if r.unplaced {
		delete(t.unplaced, r.key)
		t.dirtyPending = true
	}
}

// trainer reports whether the pod belongs in its job's trainer list.
func (r *podRecord) trainer() bool { return r.live && r.job != "" && !r.terminating }

// server reports whether the pod belongs in its job's list of masters and
// pservers.
func (r *podRecord) server() bool { return r.live && r.member != "" && r.job == "" && !r.terminating }

// listOf returns the per-job list the pod belongs in, trainers or servers,
// and its job; nil for a pod in neither.
func (t *Tracker) listOf(r *podRecord) (map[string][]*podRecord, string) {
	switch {
	case r.trainer():
		return t.trainers, r.job
	case r.server():
		return t.servers, r.member
	}
	return nil, ""
}

func (t *Tracker) addTrainerLocked(r *podRecord) {
	lists, job := t.listOf(r)
	if lists == nil {
		return
	}
	pods := lists[job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); !found {
		lists[job] = slices.Insert(pods, i, r)
		t.dirtyJobs[job] = struct{}{}
	}
}

func (t *Tracker) removeTrainerLocked(r *podRecord) {
	lists, job := t.listOf(r)
	if lists == nil {
		return
	}
	pods := lists[job]
	if i, found := slices.BinarySearchFunc(pods, r, olderRecord); found {
		t.dirtyJobs[job] = struct{}{}
		pods = slices.Delete(pods, i, i+1)
		if len(pods) == 0 {
			delete(lists, job)
		} else {
			lists[job] = pods
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

func (t *Tracker) uncountLocked(n *nodeState) {
	if n.counted {
		t.total.sub(n.alloc)
		t.requested.sub(n.requested)
		t.limits.sub(n.limits)
		t.nodeCount--
		n.counted = false
	}
}
