package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestQuantitiesSaturateInsteadOfWrapping(t *testing.T) {
	huge := resource.MustParse("9223372036854775807")
	assert.Equal(t, int64(maxAmount), saturatingMilli(huge), "CPU in millicores")
	assert.Equal(t, int64(maxAmount), saturatingValue(huge))
	assert.Equal(t, int64(-maxAmount), saturatingMilli(resource.MustParse("-9223372036854775807")))
	assert.Equal(t, int64(2500), saturatingMilli(resource.MustParse("2.5")))
	assert.Equal(t, int64(1), saturatingValue(resource.MustParse("1m")), "rounded up")
	assert.Equal(t, int64(1<<30), saturatingValue(resource.MustParse("1Gi")))

	rr := resourceReader{gpuNames: []corev1.ResourceName{DefaultGPUResourceName}}
	a := rr.read(corev1.ResourceList{corev1.ResourceCPU: huge, corev1.ResourceMemory: huge})
	assert.Positive(t, a.cpuMilli)
	assert.Positive(t, a.memBytes)
	var sum amounts
	for range 4096 {
		sum.add(a)
	}
	assert.Positive(t, sum.cpuMilli, "thousands of saturated requests still sum")
}

func TestQuotaLeftIsHardMinusUsed(t *testing.T) {
	rr := resourceReader{gpuNames: []corev1.ResourceName{DefaultGPUResourceName}}
	q := &corev1.ResourceQuota{
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("20Gi"),
			corev1.ResourceLimitsCPU: resource.MustParse("12"), "requests.nvidia.com/gpu": resource.MustParse("4"),
			corev1.ResourcePods: resource.MustParse("8"),
		}},
		Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("2500m"), corev1.ResourceMemory: resource.MustParse("4Gi"),
			corev1.ResourceLimitsCPU: resource.MustParse("13"), "requests.nvidia.com/gpu": resource.MustParse("1"),
			corev1.ResourcePods: resource.MustParse("3"),
		}},
	}
	entry, ok := rr.quotaOf(q)
	assert.True(t, ok)
	left := entry.left
	assert.Equal(t, snapshot.Quota{
		Requests: snapshot.Resources{CPUMilli: 7500, MemoryMega: 16 * 1024, GPU: 3},
		Limits:   snapshot.Resources{CPUMilli: 0, MemoryMega: snapshot.Unlimited, GPU: 3},
		Pods:     5,
	}, left, "over-used limits leave 0, not a negative room")

	scoped := q.DeepCopy()
	scoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	_, ok = rr.quotaOf(scoped)
	assert.False(t, ok, "scoped quotas are not modelled")

	assert.Equal(t, snapshot.Quota{
		Requests: snapshot.Resources{CPUMilli: 10000, MemoryMega: 20 * 1024, GPU: 4},
		Limits:   snapshot.Resources{CPUMilli: 12000, MemoryMega: snapshot.Unlimited, GPU: 4},
		Pods:     8,
	}, entry.hard, "the hard limits, whatever is used")

	assert.Equal(t, int64(5), snapshot.NoQuota.Tighter(left).Pods)
	assert.Equal(t, int64(snapshot.Unlimited), snapshot.NoQuota.Tighter(snapshot.NoQuota).Requests.CPUMilli)
}

func TestQuotasAreTrackedPerNamespace(t *testing.T) {
	s := newTracker(Config{})
	assert.Equal(t, snapshot.NoQuota, s.InquiryResource().Quota("team"))
	s.onQuota(teamQuota("a", "10", "4"))
	s.onQuota(teamQuota("b", "8", "4"))
	assert.Equal(t, int64(4000), s.InquiryResource().Quota("team").Requests.CPUMilli, "the tightest quota")
	s.onQuotaDelete(cache.DeletedFinalStateUnknown{Key: "team/b"})
	assert.Equal(t, int64(6000), s.InquiryResource().Quota("team").Requests.CPUMilli)
	assert.Equal(t, snapshot.NoQuota, s.InquiryResource().Quota("other"))
	s.onQuotaDelete(teamQuota("a", "10", "4"))
	assert.Empty(t, s.InquiryResource().Quotas)
}

// teamQuota is a quota of namespace "team" on requests.cpu, cpu hard and
// used in use.
func teamQuota(name, cpu, used string) *corev1.ResourceQuota {
	return builders.Quota(name, "team", []string{"requests.cpu", cpu}, builders.Used("requests.cpu", used))
}

// TestQuotaLeftCountsOneGPUResource: a quota on one GPU resource is the
// snapshot's GPU dimension; one on two GPU resources leaves it unlimited,
// each name being UncountedQuotaShort's.
func TestQuotaLeftCountsOneGPUResource(t *testing.T) {
	rr := resourceReader{gpuNames: []corev1.ResourceName{DefaultGPUResourceName, "amd.com/gpu"}}
	left, ok := rr.quotaLeft(builders.Quota("q", "ns", []string{"requests.nvidia.com/gpu", "4"}, builders.Used("requests.nvidia.com/gpu", "1")), true)
	assert.True(t, ok)
	assert.Equal(t, int64(3), left.Requests.GPU)

	left, ok = rr.quotaLeft(builders.Quota("q", "ns", []string{"requests.nvidia.com/gpu", "4", "requests.amd.com/gpu", "2"}), true)
	assert.True(t, ok)
	assert.Equal(t, snapshot.NoQuota.Requests.GPU, left.Requests.GPU)
}
