package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/inconshreveable/log15"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

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
func (t *Tracker) InquiryResource() snapshot.Snapshot {
	t.snapMu.Lock()
	defer t.snapMu.Unlock()
	r, b := t.collect()
	// Only what collect built anew is sorted: the rest belongs to
	// Snapshots already handed out.
	for _, i := range b.nodes {
		sortTerminating(r.Nodes[i].Terminating)
	}
	if b.allNodes {
		slices.SortFunc(r.Nodes, func(a, b snapshot.Node) int { return strings.Compare(a.Name, b.Name) })
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
func (t *Tracker) collect() (snapshot.Snapshot, built) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := snapshot.Snapshot{
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
		last = &snapshot.Snapshot{}
		for _, m := range []map[string]struct{}{t.dirtyNodes, t.dirtyJobs} {
			clear(m)
		}
		for job := range t.trainers {
			t.dirtyJobs[job] = struct{}{}
		}
		for job := range t.servers {
			t.dirtyJobs[job] = struct{}{}
		}
		t.dirtyPending, t.dirtyQuotas = true, true
	}
	var b built
	r.Nodes, b.nodes, b.allNodes = t.nodesLocked(last)
	r.Pending = last.Pending
	if t.dirtyPending {
		b.pending = true
		r.Pending = make([]snapshot.PendingPod, 0, len(t.pending))
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
	r.Trainers = refreshJobs(last.Trainers, t.trainers, t.dirtyJobs)
	r.Servers = refreshJobs(last.Servers, t.servers, t.dirtyJobs)
	r.Quotas, r.QuotaHard = last.Quotas, last.QuotaHard
	if t.dirtyQuotas {
		r.Quotas, r.QuotaHard = nil, nil
		if len(t.quotas) > 0 {
			r.Quotas = make(map[string]snapshot.Quota, len(t.quotas))
			r.QuotaHard = make(map[string]snapshot.Quota, len(t.quotas))
			for ns, qs := range t.quotas {
				left, hard := snapshot.NoQuota, snapshot.NoQuota
				for _, q := range qs {
					left, hard = left.Tighter(q.left), hard.Tighter(q.hard)
				}
				r.Quotas[ns], r.QuotaHard[ns] = left, hard
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
func (t *Tracker) nodesLocked(last *snapshot.Snapshot) (nodes []snapshot.Node, built []int, all bool) {
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
	nodes = make([]snapshot.Node, 0, t.nodeCount)
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
func (n *nodeState) snapshot(name string) snapshot.Node {
	free := n.alloc
	free.sub(n.requested)
	node := snapshot.Node{Name: name, Labels: n.labels, Taints: n.taints, Allocatable: n.alloc.floorResources(),
		Free: free.floorResources()}
	for _, p := range n.terminating {
		node.Terminating = append(node.Terminating, snapshot.TerminatingPod{Request: p.req.ceilResources(), Deadline: p.deletion, Trainer: p.job != ""})
	}
	return node
}

// refreshJobs returns last with the lists of the dirty jobs rebuilt from live
// (a job without pods left out), sharing the lists of the others; last itself
// when no job is dirty, a new map when last is nil (the first snapshot).
func refreshJobs(last map[string][]snapshot.TrainerPod, live map[string][]*podRecord, dirty map[string]struct{}) map[string][]snapshot.TrainerPod {
	if len(dirty) == 0 && last != nil {
		return last
	}
	next := make(map[string][]snapshot.TrainerPod, len(live))
	for job, list := range last {
		if _, d := dirty[job]; !d {
			next[job] = list
		}
	}
	for job := range dirty {
		if pods := live[job]; len(pods) > 0 {
			next[job] = trainerPods(pods)
		}
	}
	return next
}

func trainerPods(pods []*podRecord) []snapshot.TrainerPod {
	list := make([]snapshot.TrainerPod, 0, len(pods))
	for _, p := range pods {
		list = append(list, snapshot.TrainerPod{
			Name: p.name, Node: p.node, Phase: p.phase, Unschedulable: p.unschedulable,
			Created: p.created, Request: p.req.ceilResources(), Limits: p.lim.ceilResources(), Priority: p.priority,
		})
	}
	return list
}

func (p *podRecord) pendingPod() snapshot.PendingPod {
	return snapshot.PendingPod{
		Namespace: p.namespace, Name: p.name, Priority: p.priority,
		Request: p.req.ceilResources(), Job: p.member, Trainer: p.job != "", Created: p.created, NominatedNode: p.nominated,
		Placement: p.placement, PreemptNever: p.preemptNever, Untried: p.untried,
	}
}

func sortTerminating(ts []snapshot.TerminatingPod) {
	if len(ts) < 2 {
		return
	}
	slices.SortFunc(ts, func(a, b snapshot.TerminatingPod) int {
		if c := a.Deadline.Compare(b.Deadline); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Request.CPUMilli, b.Request.CPUMilli),
			cmp.Compare(a.Request.MemoryMega, b.Request.MemoryMega), cmp.Compare(a.Request.GPU, b.Request.GPU))
	})
}

func sortPending(ps []snapshot.PendingPod) {
	slices.SortFunc(ps, queueOrder)
}

// queueOrder is the scheduling queue's: the highest priority first, then the
// oldest, then by namespace and name.
func queueOrder(a, b snapshot.PendingPod) int {
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
