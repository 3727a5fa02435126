package cluster

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// QuotaMatches says whether a ResourceQuota counts a pod made from spec (as
// admitted) whose PriorityClass is priorityClass: an unscoped quota counts
// every pod; a scoped one (spec.scopes and spec.scopeSelector, all of which
// must match) those its scopes select. A job's pods never set
// activeDeadlineSeconds, so they are NotTerminating; a scope EDL does not
// know (CrossNamespacePodAffinity, VolumeAttributesClass) matches nothing
// it admits, as the pods do not use them.
func QuotaMatches(q *corev1.ResourceQuota, spec *corev1.PodSpec, priorityClass string) bool {
	for _, s := range q.Spec.Scopes {
		if !scopeMatches(corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}, spec, priorityClass) {
			return false
		}
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for _, r := range sel.MatchExpressions {
			if !scopeMatches(r, spec, priorityClass) {
				return false
			}
		}
	}
	return true
}

func scopeMatches(r corev1.ScopedResourceSelectorRequirement, spec *corev1.PodSpec, priorityClass string) bool {
	switch r.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return spec.ActiveDeadlineSeconds != nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return spec.ActiveDeadlineSeconds == nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(spec)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(spec)
	case corev1.ResourceQuotaScopePriorityClass:
		switch r.Operator {
		case corev1.ScopeSelectorOpExists:
			return priorityClass != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return priorityClass == ""
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(r.Values, priorityClass)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(r.Values, priorityClass)
		}
	}
	return false
}

// bestEffort is the BestEffort QoS class: no container states a cpu or
// memory request or limit.
func bestEffort(spec *corev1.PodSpec) bool {
	all := append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
	for i := range all {
		r := all[i].Resources
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := r.Requests[n]; ok {
				return false
			}
			if _, ok := r.Limits[n]; ok {
				return false
			}
		}
	}
	return true
}
