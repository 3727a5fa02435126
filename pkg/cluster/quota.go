package cluster

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// quotaEntry is what one ResourceQuota allows: the room it leaves, hard
// minus used, and its hard limits.
type quotaEntry struct{ left, hard snapshot.Quota }

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
func (rr resourceReader) quotaLeft(q *corev1.ResourceQuota, used bool) (snapshot.Quota, bool) {
	if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
		return snapshot.Quota{}, false
	}
	left := snapshot.NoQuota
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
	// The one GPU dimension counts a quota on one GPU resource; one on
	// several (nvidia.com/gpu and amd.com/gpu) holds each of its own, which
	// UncountedQuotaShort checks name by name.
	var gpus []corev1.ResourceName
	for _, g := range rr.gpuNames {
		n := corev1.ResourceName(corev1.DefaultResourceRequestsPrefix + string(g))
		if _, ok := q.Spec.Hard[n]; ok {
			gpus = append(gpus, n)
		}
	}
	if len(gpus) == 1 {
		if v, ok := dim(false, gpus[0]); ok {
			left.Requests.GPU = v
			left.Limits.GPU = v
		}
	}
	if v, ok := dim(false, corev1.ResourcePods, "count/pods"); ok {
		left.Pods = v
	}
	return left, true
}

// schedulingTaints keeps the taints that keep pods off a node, in a new
// slice; nil when there are none.
func schedulingTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return slices.Clip(out)
}
