package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestRequestsAndLimitsFollowTheScheduler(t *testing.T) {
	tests := []struct {
		name             string
		pod              *corev1.Pod
		wantReq, wantLim amounts
	}{
		{"containers are summed",
			builders.Pod("p", builders.Requests("1", "1Mi"), builders.Container("500m", "2Mi")),
			amounts{cpuMilli: 1500, memBytes: 3 * mebi}, amounts{}},
		{"init containers take the max, not the sum (the original summed them)",
			builders.Pod("p", builders.Requests("1", "1Mi"), builders.Init("2", "1Mi"), builders.Init("3", "1Mi")),
			amounts{cpuMilli: 3000, memBytes: mebi}, amounts{}},
		{"init containers smaller than the app do not count",
			builders.Pod("p", builders.Requests("4", "8Mi"), builders.Init("2", "1Mi")),
			amounts{cpuMilli: 4000, memBytes: 8 * mebi}, amounts{}},
		{"sidecars add to the running sum",
			builders.Pod("p", builders.Requests("1", "1Mi"), builders.Sidecar("500m", "1Mi")),
			amounts{cpuMilli: 1500, memBytes: 2 * mebi}, amounts{}},
		{"an init container after a sidecar runs alongside it",
			builders.Pod("p", builders.Requests("1", "1Mi"), builders.Sidecar("1", "1Mi"), builders.Init("3", "1Mi")),
			amounts{cpuMilli: 4000, memBytes: 2 * mebi}, amounts{}},
		{"an init container before a sidecar does not",
			builders.Pod("p", builders.Requests("1", "1Mi"), builders.Init("3", "1Mi"), builders.Sidecar("1", "1Mi")),
			amounts{cpuMilli: 3000, memBytes: 2 * mebi}, amounts{}},
		{"overhead is added to requests, and to limits only where set",
			builders.Pod("p", builders.Requests("1", "1Mi"), builders.Limits("2", ""), builders.Overhead("250m", "1Mi")),
			amounts{cpuMilli: 1250, memBytes: 2 * mebi}, amounts{cpuMilli: 2250}},
		{"pod-level resources replace the container aggregate",
			builders.Pod("p", builders.Requests("1", "1Mi"), func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: builders.CPUMemory("3", ""), Limits: builders.CPUMemory("", "5Mi")}
			}),
			amounts{cpuMilli: 3000, memBytes: mebi}, amounts{memBytes: 5 * mebi}},
		{"GPUs", builders.Pod("p", builders.GPU(2)), amounts{gpu: 2}, amounts{gpu: 2}},
	}
	rr := resourceReader{gpuNames: []corev1.ResourceName{DefaultGPUResourceName}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, lim := rr.podRequestsAndLimits(podResources(&tt.pod.Spec))
			assert.Equal(t, tt.wantReq, req)
			assert.Equal(t, tt.wantLim, lim)
		})
	}
}

func TestGPUResourceNamesAreConfigurable(t *testing.T) {
	amd := corev1.ResourceName("amd.com/gpu")
	s := newTracker(Config{GPUResourceNames: []corev1.ResourceName{DefaultGPUResourceName, amd}})
	s.onNode(builders.Node("n1", "4", "8Gi", builders.NodeGPU(4), func(n *corev1.Node) {
		n.Status.Allocatable[amd] = *resource.NewQuantity(2, resource.DecimalSI)
	}))
	s.onPod(builders.Pod("p", builders.OnNode("n1"), builders.GPU(1), func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[amd] = *resource.NewQuantity(1, resource.DecimalSI)
	}))
	r := s.InquiryResource()
	assert.Equal(t, int64(6), r.GPUTotal)
	assert.Equal(t, int64(2), r.GPURequest)
	assert.Equal(t, map[string]int64{"n1": 4}, r.NodeResources().NodesGPUFree)
}
