package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

func (t *Tracker) onPod(obj interface{}) {
	pod, ok := PodOf(obj)
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

func (t *Tracker) newPodRecord(pod *Pod) *podRecord {
	rec := &podRecord{
		key:         pod.Namespace + "/" + pod.Name,
		rv:          pod.ResourceVersion,
		namespace:   pod.Namespace,
		name:        pod.Name,
		node:        pod.NodeName,
		phase:       pod.Phase,
		live:        pod.Phase != corev1.PodSucceeded && pod.Phase != corev1.PodFailed,
		terminating: pod.DeletionTimestamp != nil,
		created:     pod.CreationTimestamp.Time,
		nominated:   pod.NominatedNodeName,
		priority:    pod.Priority,
	}
	if pod.DeletionTimestamp != nil {
		rec.deletion = pod.DeletionTimestamp.Time
	}
	if job, role, ok := v1.JobOf(pod.Labels); ok && controlledByJob(pod, job, role) {
		rec.member = shareString(pod.Namespace + "/" + job) // the job's pods share it
		if role == v1.RoleTrainer {
			rec.job = rec.member
		}
	}
	rec.unschedulable = rec.live && rec.phase == corev1.PodPending && rec.node == "" && pod.Unschedulable()
	rec.unplaced = rec.member != "" && rec.live && rec.node == "" && !rec.unschedulable && !rec.terminating
	// A pod of no job that kube-scheduler has not tried yet (nor gated:
	// a gated pod has its condition) waits with the unschedulable ones: in
	// a burst the scheduler tries pods one at a time, and the plan may free
	// room for those it has not reached before it preempts for them.
	rec.untried = rec.member == "" && rec.live && rec.phase == corev1.PodPending && rec.node == "" && !rec.terminating &&
		pod.Scheduled == nil
	if s := pod.Scheduling; s != nil && (rec.unschedulable || rec.unplaced || rec.untried) {
		rec.placement, rec.preemptNever = s.Placement, s.PreemptNever
	}
	if pod.Resources != nil {
		rec.req, rec.lim = t.reader.podRequestsAndLimits(pod.Resources)
	}
	return rec
}

// controlledByJob reports whether the pod's controller is the job's
// ReplicaSet of the role its label names.
func controlledByJob(pod *Pod, job string, role v1.Role) bool {
	ref := pod.Controller()
	return ref != nil && ref.Kind == "ReplicaSet" && ref.Name == v1.ReplicaSetName(job, role)
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

func nodeReady(node *corev1.Node) bool {
	for i := range node.Status.Conditions {
		if c := &node.Status.Conditions[i]; c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (t *Tracker) onQuota(obj interface{}) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return
	}
	entry, modelled := t.reader.quotaOf(q)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dirtyQuotas = true
	qs := t.quotas[q.Namespace]
	if !modelled {
		delete(qs, q.Name)
	} else {
		if qs == nil {
			qs = map[string]quotaEntry{}
			t.quotas[q.Namespace] = qs
		}
		qs[q.Name] = entry
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
