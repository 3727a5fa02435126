package cluster

import (
	corev1 "k8s.io/api/core/v1"
)

// quotaEntry is what one ResourceQuota allows: the room it leaves, hard
// minus used, and its hard limits.
type quotaEntry struct{ left, hard Quota }

// quotaOf returns the room one ResourceQuota leaves and its hard limits,
// and false for a quota that applies to some pods only (scopes or a scope
// selector), which is not modelled.
func (rr resourceReader) quotaOf(q *corev1.ResourceQuota) (quotaEntry, bool) {
	left, ok := rr.quotaLeft(q, true)
	if !ok {
		return quotaEntry{}, false
	}
	hard, _ := rr.quotaLeft(q, false)
	return quotaEntry{left: left, hard: hard}, true
}

// quotaLeft returns the room one ResourceQuota leaves, hard minus used (its
// hard limits when used is false), and false for a quota that applies to
// some pods only.
func (rr resourceReader) quotaLeft(q *corev1.ResourceQuota, used bool) (Quota, bool) {
	if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
		return Quota{}, false
	}
	left := NoQuota
	// dim is hard − used of the first of names the quota sets, in whole
	// units or, with milli, thousandths.
	dim := func(milli bool, names ...corev1.ResourceName) (int64, bool) {
		read := saturatingValue
		if milli {
			read = saturatingMilli
		}
		for _, n := range names {
			if hard, ok := q.Spec.Hard[n]; ok {
				if !used {
					return max(0, read(hard)), true
				}
				return max(0, read(hard)-read(q.Status.Used[n])), true
			}
		}
		return 0, false
	}
	if v, ok := dim(true, corev1.ResourceRequestsCPU, corev1.ResourceCPU); ok {
		left.Requests.CPUMilli = v
	}
	if v, ok := dim(false, corev1.ResourceRequestsMemory, corev1.ResourceMemory); ok {
		left.Requests.MemoryMega = v / mebi
	}
	if v, ok := dim(true, corev1.ResourceLimitsCPU); ok {
		left.Limits.CPUMilli = v
	}
	if v, ok := dim(false, corev1.ResourceLimitsMemory); ok {
		left.Limits.MemoryMega = v / mebi
	}
	for _, g := range rr.gpuNames {
		if v, ok := dim(false, corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(g))); ok {
			left.Requests.GPU = min(left.Requests.GPU, v)
			left.Limits.GPU = left.Requests.GPU
		}
	}
	if v, ok := dim(false, corev1.ResourcePods, "count/pods"); ok {
		left.Pods = v
	}
	return left, true
}

// tighter returns the smaller room of a and b in every dimension.
func (a Quota) tighter(b Quota) Quota {
	return Quota{
		Requests: Resources{CPUMilli: min(a.Requests.CPUMilli, b.Requests.CPUMilli),
			MemoryMega: min(a.Requests.MemoryMega, b.Requests.MemoryMega), GPU: min(a.Requests.GPU, b.Requests.GPU)},
		Limits: Resources{CPUMilli: min(a.Limits.CPUMilli, b.Limits.CPUMilli),
			MemoryMega: min(a.Limits.MemoryMega, b.Limits.MemoryMega), GPU: min(a.Limits.GPU, b.Limits.GPU)},
		Pods: min(a.Pods, b.Pods),
	}
}
