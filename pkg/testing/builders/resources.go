package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// GPUResourceName is the extended resource GPU and NodeGPU set: EDL's
// default GPU resource.
const GPUResourceName corev1.ResourceName = "nvidia.com/gpu"

// CPUMemory is a list of cpu and memory quantities; an empty string leaves
// that resource out.
func CPUMemory(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// ResourceList is a list of name, quantity pairs:
// ResourceList("cpu", "2", "requests.memory", "4Gi").
func ResourceList(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}
