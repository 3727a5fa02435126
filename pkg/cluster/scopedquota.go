package cluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// RolePods are Count pods of one role made from Spec (as admitted,
// AdmittedPodSpec), for ScopedQuotaShort.
type RolePods struct {
	Role  string
	Count int32
	Spec  *corev1.PodSpec
}

// ScopedQuotaShort says which scoped ResourceQuota cannot hold a job's
// minimum, pods of the PriorityClass priorityClass: for each quota with
// scopes or a scope selector, the roles whose pods it matches (QuotaMatches)
// are summed on pods, requests.cpu (cpu), requests.memory (memory),
// limits.cpu and limits.memory, and compared with hard − used (status.used;
// the hard limit when above, so that the caller can tell waiting from never
// fitting). It returns the message and whether the hard limit itself is too
// small; "" when every scoped quota holds the minimum. Unscoped quotas are
// the snapshot's.
func ScopedQuotaShort(quotas []*corev1.ResourceQuota, pods []RolePods, priorityClass string) (string, bool) {
	for _, q := range quotas {
		if len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil {
			continue
		}
		use := corev1.ResourceList{}
		for _, rp := range pods {
			if rp.Count <= 0 || !QuotaMatches(q, rp.Spec, priorityClass) {
				continue
			}
			for name, v := range podQuotaUsage(rp.Spec) {
				total := use[name]
				for range rp.Count {
					total.Add(v)
				}
				use[name] = total
			}
		}
		for _, name := range sortedNames(q.Spec.Hard) {
			need, ok := use[name]
			if !ok {
				continue
			}
			hard := q.Spec.Hard[name]
			if need.Cmp(hard) > 0 {
				return fmt.Sprintf("its minimum needs %s of ResourceQuota %s's %s, above its hard limit of %s: it cannot start until the quota is raised",
					need.String(), q.Name, name, hard.String()), true
			}
			left := hard.DeepCopy()
			left.Sub(q.Status.Used[name])
			if need.Cmp(left) > 0 {
				return fmt.Sprintf("ResourceQuota %s's %s: %s left, the minimum needs %s", q.Name, name, left.String(), need.String()), false
			}
		}
	}
	return "", false
}

// podQuotaUsage is what one pod counts against a quota, by the quota's
// names: the pod, and its effective requests and limits of cpu and memory
// (the larger of the app containers' sum and any init container, as the
// quota evaluator counts them; the pod's overhead added).
func podQuotaUsage(spec *corev1.PodSpec) corev1.ResourceList {
	req, lim := effective(spec, false), effective(spec, true)
	out := corev1.ResourceList{
		corev1.ResourcePods:               resource.MustParse("1"),
		corev1.ResourceName("count/pods"): resource.MustParse("1"),
	}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if v, ok := req[n]; ok {
			out[n] = v
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(n))] = v
		}
		if v, ok := lim[n]; ok {
			out[corev1.ResourceName("limits."+string(n))] = v
		}
	}
	return out
}

// effective is the pod's requests (limits with limit) of cpu and memory:
// max(sum of app containers, each init container), plus the overhead.
func effective(spec *corev1.PodSpec, limit bool) corev1.ResourceList {
	pick := func(c *corev1.Container) corev1.ResourceList {
		if limit {
			return c.Resources.Limits
		}
		return c.Resources.Requests
	}
	sum := corev1.ResourceList{}
	for i := range spec.Containers {
		for n, v := range pick(&spec.Containers[i]) {
			t := sum[n]
			t.Add(v)
			sum[n] = t
		}
	}
	for i := range spec.InitContainers {
		for n, v := range pick(&spec.InitContainers[i]) {
			if t, ok := sum[n]; !ok || v.Cmp(t) > 0 {
				sum[n] = v.DeepCopy()
			}
		}
	}
	for n, v := range spec.Overhead {
		if t, ok := sum[n]; ok || !limit {
			t.Add(v)
			sum[n] = t
		}
	}
	return sum
}
