package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Resources is an amount of the three resources the autoscaler balances.
// Memory is in MiB (2^20 bytes), like every *Mega field of this package.
type Resources struct {
	CPUMilli   int64
	MemoryMega int64
	GPU        int64
}

// IsZero reports whether r asks for nothing at all.
func (r Resources) IsZero() bool { return r == Resources{} }

// String renders r for people, e.g. "2.5 CPU, 4096 MiB memory, 1 GPU", which
// is the shape the autoscaler's reasons use.
func (r Resources) String() string {
	return fmt.Sprintf("%s CPU, %d MiB memory, %d GPU", FormatMilli(r.CPUMilli), r.MemoryMega, r.GPU)
}

// FormatMilli renders a milli-value in whole units without trailing zeros:
// 2000 → "2", 2500 → "2.5", 265 → "0.265".
func FormatMilli(m int64) string {
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64)
}

// NodeResources is the per-node free capacity of the counted nodes, keyed by
// node name, in the shape the original EDL logged it (see Snapshot.String).
type NodeResources struct {
	NodesCPUIdleMilli   map[string]int64
	NodesMemoryFreeMega map[string]int64
	NodesGPUFree        map[string]int64
}

// PendingPod is a pod the scheduler could not place: phase Pending, no node,
// and condition PodScheduled=False with reason Unschedulable; or, Untried,
// a pod of no TrainingJob it has not tried yet.
type PendingPod struct {
	Namespace string
	Name      string
	// Priority is the pod's resolved spec.priority (0 when unset).
	Priority int32
	// Request is the pod's effective request as the scheduler counts it.
	Request Resources
	// Job is "namespace/job" when the pod belongs to a TrainingJob: a
	// trainer, parameter server or master (labelled paddle-job,
	// paddle-job-pserver or paddle-job-master); else "".
	Job string
	// Trainer is true for a trainer pod (labelled paddle-job).
	Trainer bool
	// Created orders pods of equal priority the way the scheduling queue does.
	Created time.Time
	// NominatedNode is status.nominatedNodeName: the scheduler has already
	// preempted pods there for this one and waits for them to go.
	NominatedNode string
	// Placement restricts the nodes the pod may run on; nil for none.
	Placement *Placement
	// PreemptNever is set for preemptionPolicy: Never: the pod waits for
	// room and never takes it from pods of a lower priority.
	PreemptNever bool
	// Untried is set for a pod of no TrainingJob that kube-scheduler has
	// not tried yet (no PodScheduled condition): in a burst it tries pods
	// one at a time, and until then the plan treats the pod as one the
	// scheduler found no node for, if none has room.
	Untried bool
}

// TrainerPod is what the planner needs to know about one live trainer pod.
type TrainerPod struct {
	Name string
	// Node is spec.nodeName, "" while the pod is not bound.
	Node  string
	Phase corev1.PodPhase
	// Unschedulable is true when the scheduler reported it cannot place the
	// pod (see PendingPod).
	Unschedulable bool
	// Created is the pod's creationTimestamp; the ReplicaSet controller
	// deletes the newest pods first when it scales down.
	Created time.Time
	// Request is the pod's effective request as the scheduler counts it,
	// as admitted: with LimitRange defaults and RuntimeClass overhead.
	// Limits likewise, for quotas on limits.
	Request, Limits Resources
	// Priority is the pod's resolved spec.priority.
	Priority int32
}

// Running reports whether the pod's phase is Running.
func (p TrainerPod) Running() bool { return p.Phase == corev1.PodRunning }

// Snapshot is a point-in-time copy of the cluster's capacity and load, as
// Tracker.InquiryResource returns it. It is read-only: its maps and slices
// may be shared with other Snapshots (use DeepCopy to modify one).
//
// Only counted nodes, Ready and not cordoned (spec.unschedulable), take part:
// the totals are their allocatable, and the requests and limits those of the
// live pods (neither Succeeded nor Failed) bound to them. Pending pods are
// not load: they are listed in Pending, and the planner decides which of
// them matter to whom. The field order of the first eleven fields is the
// original EDL's and is what the "Cluster.InquiryResource done" log line
// shows; keep new fields after Nodes.
type Snapshot struct {
	NodeCount int

	GPURequest int64
	GPULimit   int64
	GPUTotal   int64

	CPURequestMilli int64
	CPULimitMilli   int64
	CPUTotalMilli   int64

	MemoryRequestMega int64
	MemoryLimitMega   int64
	MemoryTotalMega   int64

	// Nodes are the counted nodes, by name.
	Nodes []Node

	// Pending lists the unschedulable pods, highest priority first, then
	// oldest first, then by namespace/name.
	Pending []PendingPod

	// Trainers maps "namespace/job" to the job's live trainer pods (labelled
	// paddle-job=<job>, not Succeeded, Failed or terminating), oldest first,
	// then by name.
	Trainers map[string][]TrainerPod

	// Servers maps "namespace/job" to the job's live master and pserver
	// pods (labelled for the role and controlled by the job's ReplicaSet of
	// it, not terminating), in the same order: with Trainers, all of a
	// running job's pods, which preempting the job frees.
	Servers map[string][]TrainerPod

	// Quotas is the room the ResourceQuotas of each namespace that has any
	// leave; a namespace without one is not in the map (NoQuota).
	Quotas map[string]Quota
	// QuotaHard is the hard limits of the same quotas, the smallest per
	// dimension: what the namespace could hold if nothing in it ran. It has
	// the same keys as Quotas.
	QuotaHard map[string]Quota

	// Unplaced lists the pods of TrainingJobs that are neither bound nor
	// reported unschedulable, nor being deleted: pods the scheduler has not
	// tried yet, and pods held by scheduling gates (a queued job's), in
	// Pending's order.
	Unplaced []PendingPod
}

// Quota returns the room namespace ns's quotas leave.
func (r Snapshot) Quota(ns string) Quota {
	if q, ok := r.Quotas[ns]; ok {
		return q
	}
	return NoQuota
}

// HardQuota returns the hard limits of namespace ns's quotas.
func (r Snapshot) HardQuota(ns string) Quota {
	if q, ok := r.QuotaHard[ns]; ok {
		return q
	}
	return NoQuota
}

// NodeResources returns the counted nodes' free capacity in the original
// EDL's maps.
func (r Snapshot) NodeResources() NodeResources {
	out := NodeResources{
		NodesCPUIdleMilli:   make(map[string]int64, len(r.Nodes)),
		NodesMemoryFreeMega: make(map[string]int64, len(r.Nodes)),
		NodesGPUFree:        make(map[string]int64, len(r.Nodes)),
	}
	for _, n := range r.Nodes {
		out.NodesCPUIdleMilli[n.Name] = n.Free.CPUMilli
		out.NodesMemoryFreeMega[n.Name] = n.Free.MemoryMega
		out.NodesGPUFree[n.Name] = n.Free.GPU
	}
	return out
}

// String renders r in the original EDL's %+v shape, but summarises Pending and
// Trainers as counts: at cluster scale they are too big for a log line.
func (r Snapshot) String() string {
	pods := 0
	for _, t := range r.Trainers {
		pods += len(t)
	}
	return fmt.Sprintf("{NodeCount:%d GPURequest:%d GPULimit:%d GPUTotal:%d "+
		"CPURequestMilli:%d CPULimitMilli:%d CPUTotalMilli:%d "+
		"MemoryRequestMega:%d MemoryLimitMega:%d MemoryTotalMega:%d Nodes:%+v "+
		"Pending:[%d pods] Trainers:[%d jobs, %d pods]}",
		r.NodeCount, r.GPURequest, r.GPULimit, r.GPUTotal,
		r.CPURequestMilli, r.CPULimitMilli, r.CPUTotalMilli,
		r.MemoryRequestMega, r.MemoryLimitMega, r.MemoryTotalMega, r.NodeResources(),
		len(r.Pending), len(r.Trainers), pods)
}

// TrainerPods returns the live trainer pods of the job "namespace/name". The
// slice belongs to r; treat it as read-only.
func (r Snapshot) TrainerPods(key string) []TrainerPod { return r.Trainers[key] }

// Idle returns the cluster-wide unrequested capacity: totals minus requests.
func (r Snapshot) Idle() Resources {
	return Resources{
		CPUMilli:   r.CPUTotalMilli - r.CPURequestMilli,
		MemoryMega: r.MemoryTotalMega - r.MemoryRequestMega,
		GPU:        r.GPUTotal - r.GPURequest,
	}
}

// DeepCopy returns a copy of r that shares no maps or slices with it but the
// nodes' Labels and Taints and the pending pods' Placements, which are
// read-only.
func (r Snapshot) DeepCopy() Snapshot {
	out := r
	if r.Nodes != nil {
		out.Nodes = make([]Node, len(r.Nodes))
		for i, n := range r.Nodes {
			n.Terminating = slices.Clone(n.Terminating)
			out.Nodes[i] = n
		}
	}
	if r.Pending != nil {
		out.Pending = slices.Clone(r.Pending)
	}
	if r.Unplaced != nil {
		out.Unplaced = append([]PendingPod(nil), r.Unplaced...)
	}
	if r.Quotas != nil {
		out.Quotas = maps.Clone(r.Quotas)
	}
	if r.QuotaHard != nil {
		out.QuotaHard = maps.Clone(r.QuotaHard)
	}
	if r.Trainers != nil {
		out.Trainers = make(map[string][]TrainerPod, len(r.Trainers))
		for k, v := range r.Trainers {
			out.Trainers[k] = slices.Clone(v)
		}
	}
	if r.Servers != nil {
		out.Servers = make(map[string][]TrainerPod, len(r.Servers))
		for k, v := range r.Servers {
			out.Servers[k] = slices.Clone(v)
		}
	}
	return out
}
