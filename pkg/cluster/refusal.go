package cluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// quotaStated are the hard names of a ResourceQuota that make the API server
// refuse a pod whose containers do not all state the matching request or
// limit (the pod evaluator's constraints), with the field each needs.
var quotaStated = []struct {
	hard  []corev1.ResourceName
	field string
	limit bool
	name  corev1.ResourceName
}{
	{[]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceRequestsCPU}, "requests.cpu", false, corev1.ResourceCPU},
	{[]corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceRequestsMemory}, "requests.memory", false, corev1.ResourceMemory},
	{[]corev1.ResourceName{corev1.ResourceLimitsCPU}, "limits.cpu", true, corev1.ResourceCPU},
	{[]corev1.ResourceName{corev1.ResourceLimitsMemory}, "limits.memory", true, corev1.ResourceMemory},
}

// AdmissionRefusal says why the API server will refuse every pod made from
// spec — spec as admitted, AdmittedPodSpec — in a namespace with these
// LimitRanges and ResourceQuotas, and "" when it will not:
//
//   - a quota that tracks requests.cpu (or cpu), requests.memory (or
//     memory), limits.cpu or limits.memory refuses a pod with a container
//     (app, init or sidecar) that does not state it;
//   - a LimitRange's Container item refuses a container whose request or
//     limit is below its min, above its max, or missing where min or max
//     needs it, or whose limit is more than maxLimitRequestRatio times its
//     request.
//
// Scoped quotas apply only to the pods their scopes match, which is
// quotaMatches's to say; the caller passes the ones that match. Pod-type
// LimitRange items are not checked.
func AdmissionRefusal(spec *corev1.PodSpec, ranges []*corev1.LimitRange, quotas []*corev1.ResourceQuota) string {
	containers := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers))
	for i := range spec.InitContainers {
		containers = append(containers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		containers = append(containers, &spec.Containers[i])
	}
	for _, q := range quotas {
		for _, s := range quotaStated {
			if !hardNames(q, s.hard) {
				continue
			}
			var missing []string
			for _, c := range containers {
				l := c.Resources.Requests
				if s.limit {
					l = c.Resources.Limits
				}
				if _, ok := l[s.name]; !ok {
					missing = append(missing, c.Name)
				}
			}
			if len(missing) > 0 {
				return fmt.Sprintf("ResourceQuota %s tracks %s, which container %s does not state: the API server refuses the pod",
					q.Name, s.field, strings.Join(missing, ", "))
			}
		}
	}
	for _, lr := range ranges {
		for i := range lr.Spec.Limits {
			it := &lr.Spec.Limits[i]
			if it.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, c := range containers {
				if why := limitRangeRefuses(it, c); why != "" {
					return fmt.Sprintf("LimitRange %s refuses container %s: %s", lr.Name, c.Name, why)
				}
			}
		}
	}
	return ""
}

func hardNames(q *corev1.ResourceQuota, names []corev1.ResourceName) bool {
	for _, n := range names {
		if _, ok := q.Spec.Hard[n]; ok {
			return true
		}
	}
	return false
}

// limitRangeRefuses is the LimitRanger plugin's validation of one container
// against one Container-type item.
func limitRangeRefuses(it *corev1.LimitRangeItem, c *corev1.Container) string {
	req, lim := c.Resources.Requests, c.Resources.Limits
	for _, name := range sortedNames(it.Min) {
		lo := it.Min[name]
		r, hasR := req[name]
		l, hasL := lim[name]
		switch {
		case !hasR:
			return fmt.Sprintf("its minimum %s is %s and no request states it", name, lo.String())
		case r.Cmp(lo) < 0:
			return fmt.Sprintf("its minimum %s is %s, the request %s", name, lo.String(), r.String())
		case hasL && l.Cmp(lo) < 0:
			return fmt.Sprintf("its minimum %s is %s, the limit %s", name, lo.String(), l.String())
		}
	}
	for _, name := range sortedNames(it.Max) {
		hi := it.Max[name]
		r, hasR := req[name]
		l, hasL := lim[name]
		switch {
		case !hasL:
			return fmt.Sprintf("its maximum %s is %s and no limit states it", name, hi.String())
		case l.Cmp(hi) > 0:
			return fmt.Sprintf("its maximum %s is %s, the limit %s", name, hi.String(), l.String())
		case hasR && r.Cmp(hi) > 0:
			return fmt.Sprintf("its maximum %s is %s, the request %s", name, hi.String(), r.String())
		}
	}
	for _, name := range sortedNames(it.MaxLimitRequestRatio) {
		ratio := it.MaxLimitRequestRatio[name]
		r, hasR := req[name]
		l, hasL := lim[name]
		switch {
		case !hasR || r.IsZero():
			return fmt.Sprintf("its maxLimitRequestRatio for %s is %s and no request states it", name, ratio.String())
		case !hasL:
			return fmt.Sprintf("its maxLimitRequestRatio for %s is %s and no limit states it", name, ratio.String())
		case overRatio(l, r, ratio):
			return fmt.Sprintf("its maxLimitRequestRatio for %s is %s, the limit %s over the request %s", name, ratio.String(), l.String(), r.String())
		}
	}
	return ""
}

// overRatio is limit/request > ratio, in milli-units as the plugin computes it.
func overRatio(limit, request, ratio resource.Quantity) bool {
	return float64(limit.MilliValue())/float64(request.MilliValue()) > float64(ratio.MilliValue())/1000
}

// sortedNames are l's names in order, so that a message is the same from one
// plan to the next.
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
