package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	b "github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestUncountedQuotaShort(t *testing.T) {
	high := func(q *corev1.ResourceQuota) {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
	}
	pods := []RolePods{
		{Role: "pserver", Count: 1, Spec: &b.Pod("ps", b.Requests("1", "1Gi")).Spec},
		{Role: "trainer", Count: 3, Spec: &b.Pod("tr", b.Requests("2", "1Gi"), b.Init("5", "")).Spec},
	}
	cases := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		class  string
		want   string
		hard   bool
	}{
		{name: "unscoped quotas are the snapshot's", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "1"})}, class: "high"},
		{name: "a PriorityClass quota of another class", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "1"}, high)}, class: "low"},
		{name: "a PriorityClass quota that holds the minimum", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "16"}, high)}, class: "high"},
		{name: "a PriorityClass quota below the minimum: an init container counts when larger", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "10"}, high)}, class: "high",
			want: "its minimum needs 16 of ResourceQuota q's requests.cpu, above its hard limit of 10: it cannot start until the quota is raised", hard: true},
		{name: "a PriorityClass quota whose room is used", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"pods", "10"}, high, b.Used("pods", "7"))}, class: "high",
			want: "ResourceQuota q's pods: 3 left, the minimum needs 4"},
		{name: "cpu is requests.cpu", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"cpu", "20"}, b.Scopes(corev1.ResourceQuotaScopeNotBestEffort), b.Used("cpu", "5"))},
			want: "ResourceQuota q's cpu: 15 left, the minimum needs 16"},
		{name: "a BestEffort quota does not count pods with requests", quotas: []*corev1.ResourceQuota{b.Quota("q", "ns", []string{"pods", "1"}, b.Scopes(corev1.ResourceQuotaScopeBestEffort))}},
	}
	// A sidecar runs beside the app containers: the quota counts it in
	// their sum (1 + 3 × (2 + 1) = 10), where an ordinary init container
	// counts only when larger.
	withSidecar := []RolePods{pods[0], {Role: "trainer", Count: 3, Spec: &b.Pod("tr", b.Requests("2", "1Gi"), b.Sidecar("1", "")).Spec}}
	got, hard := UncountedQuotaShort([]*corev1.ResourceQuota{b.Quota("q", "ns", []string{"requests.cpu", "9"}, high)}, withSidecar, "high", nil)
	assert.Equal(t, "its minimum needs 10 of ResourceQuota q's requests.cpu, above its hard limit of 9: it cannot start until the quota is raised", got)
	assert.True(t, hard)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, hard := UncountedQuotaShort(tc.quotas, pods, tc.class, nil)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.hard, hard)
		})
	}
}

// TestUncountedQuotaShortReadsExtendedResources: an unscoped quota's
// extended resources are checked name by name, and so are its GPUs when it
// names several GPU resources; a quota on one GPU resource is the
// snapshot's.
func TestUncountedQuotaShortReadsExtendedResources(t *testing.T) {
	const amd = corev1.ResourceName("amd.com/gpu")
	gpus := []corev1.ResourceName{b.GPUResourceName, amd}
	pods := []RolePods{
		{Role: "pserver", Count: 1, Spec: &b.Pod("ps", b.Requests("1", "1Gi")).Spec},
		{Role: "trainer", Count: 3, Spec: &b.Pod("tr", b.Requests("2", "1Gi"), b.GPU(2), b.Extended("example.com/fpga", 1)).Spec},
	}
	cases := []struct {
		name  string
		quota *corev1.ResourceQuota
		want  string
		hard  bool
	}{
		{name: "one GPU resource is the snapshot's", quota: b.Quota("q", "ns", []string{"requests.nvidia.com/gpu", "2"})},
		{name: "cpu is the snapshot's", quota: b.Quota("q", "ns", []string{"requests.cpu", "1"})},
		{name: "GPUs of two names, each its own", quota: b.Quota("q", "ns", []string{"requests.nvidia.com/gpu", "8", "requests.amd.com/gpu", "8"},
			b.Used("requests.nvidia.com/gpu", "4")),
			want: "ResourceQuota q's requests.nvidia.com/gpu: 4 left, the minimum needs 6"},
		{name: "GPUs of two names, the other one unused", quota: b.Quota("q", "ns", []string{"requests.nvidia.com/gpu", "8", "requests.amd.com/gpu", "0"})},
		{name: "another extended resource, below the minimum", quota: b.Quota("q", "ns", []string{"requests.example.com/fpga", "2"}),
			want: "its minimum needs 3 of ResourceQuota q's requests.example.com/fpga, above its hard limit of 2: it cannot start until the quota is raised", hard: true},
		{name: "another extended resource that holds it", quota: b.Quota("q", "ns", []string{"requests.example.com/fpga", "3"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, hard := UncountedQuotaShort([]*corev1.ResourceQuota{tc.quota}, pods, "", gpus)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.hard, hard)
		})
	}
}
