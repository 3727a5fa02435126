package cluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// RolePods are Count pods of one role made from Spec (as admitted,
// AdmittedPodSpec), for UncountedQuotaShort.
type RolePods struct {
	Role  string
	Count int32
	Spec  *corev1.PodSpec
}

// UncountedQuotaShort says which ResourceQuota the snapshot does not count
// cannot hold a job's minimum, pods of the PriorityClass priorityClass. The
// snapshot counts the unscoped quotas' pods, cpu, memory and GPUs when they
// name one GPU resource of gpuNames (the planner's one GPU dimension); this
// counts the rest: every name of a quota with scopes or a scope selector,
// summed over the roles whose pods it matches (QuotaMatches), and, of an
// unscoped quota, the requests of extended resources — every one that is
// not a GPU of gpuNames, and each GPU resource of its own when the quota
// names several (quotas are per name: nvidia.com/gpu and amd.com/gpu do not
// share one). Each is compared with hard − used (status.used; the hard
// limit when above, so that the caller can tell waiting from never
// fitting). It returns the message and whether the hard limit itself is too
// small; "" when every such quota holds the minimum.
func UncountedQuotaShort(quotas []*corev1.ResourceQuota, pods []RolePods, priorityClass string, gpuNames []corev1.ResourceName) (string, bool) {
	for _, q := range quotas {
		scoped := len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil
		use := corev1.ResourceList{}
		for _, rp := range pods {
			if rp.Count <= 0 || (scoped && !QuotaMatches(q, rp.Spec, priorityClass)) {
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
		counted := countedNames(q, gpuNames)
		for _, name := range sortedNames(q.Spec.Hard) {
			need, ok := use[name]
			if !ok || (!scoped && counted[name]) {
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

// countedNames are the names of an unscoped quota the snapshot counts
// (quotaLeft): everything but extended resources, and the one GPU resource
// of gpuNames it names, if it names one only.
func countedNames(q *corev1.ResourceQuota, gpuNames []corev1.ResourceName) map[corev1.ResourceName]bool {
	counted := map[corev1.ResourceName]bool{}
	var gpus []corev1.ResourceName
	for name := range q.Spec.Hard {
		ext, ok := strings.CutPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
		switch {
		case !ok || !isExtendedResource(corev1.ResourceName(ext)):
			counted[name] = true
		case slices.Contains(gpuNames, corev1.ResourceName(ext)):
			gpus = append(gpus, name)
		}
	}
	if len(gpus) == 1 {
		counted[gpus[0]] = true
	}
	return counted
}

// isExtendedResource: a resource outside the kubernetes.io domain, such as
// nvidia.com/gpu, which a quota counts as requests.<name>.
func isExtendedResource(name corev1.ResourceName) bool {
	return strings.Contains(string(name), "/") && !strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// podQuotaUsage is what one pod counts against a quota, by the quota's
// names: the pod, its effective requests and limits of cpu and memory, and
// its effective requests of extended resources (requests.<name>), as the
// quota evaluator counts them ([effective]).
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
	for n, v := range req {
		if isExtendedResource(n) {
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(n))] = v
		}
	}
	return out
}

// effective is the pod's requests (limits with limit) as the quota
// evaluator counts them: component-helpers' PodRequests and PodLimits —
// app containers and sidecars summed, the larger of that and each init
// container step, pod-level resources, and the RuntimeClass overhead.
func effective(spec *corev1.PodSpec, limit bool) corev1.ResourceList {
	pod := &corev1.Pod{Spec: *spec}
	if limit {
		return resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}
