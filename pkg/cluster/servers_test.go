package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

func TestServersListEachJobsMastersAndPservers(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(newNode("n1", "8", "8Gi"))
	s.onPod(newPod("q-master", memberOf("q", v1.RoleMaster), onNode("n1"), createdAt(2), withRequests("1", "1Gi")))
	s.onPod(newPod("q-pserver", memberOf("q", v1.RolePserver), onNode("n1"), createdAt(1), withRequests("2", "1Gi")))
	s.onPod(newPod("q-trainer", trainerOf("q"), onNode("n1"), createdAt(1)))
	s.onPod(newPod("r-pserver", memberOf("r", v1.RolePserver), onNode("n1"), terminating()))
	s.onPod(newPod("stray", onNode("n1")))

	r := s.InquiryResource()
	require.Len(t, r.Servers["ns/q"], 2)
	assert.Equal(t, "q-pserver", r.Servers["ns/q"][0].Name, "oldest first")
	assert.Equal(t, "n1", r.Servers["ns/q"][0].Node)
	assert.Equal(t, snapshot.Resources{CPUMilli: 2000, MemoryMega: 1024}, r.Servers["ns/q"][0].Request)
	assert.Equal(t, "q-master", r.Servers["ns/q"][1].Name)
	assert.NotContains(t, r.Servers, "ns/r", "a terminating pserver is going, not the job's")
	assert.Len(t, r.Trainers["ns/q"], 1, "trainers stay apart")

	// Only the job that changed is built anew; a deleted pod leaves.
	s.onPodDelete(newPod("q-master", memberOf("q", v1.RoleMaster)))
	next := s.InquiryResource()
	require.Len(t, next.Servers["ns/q"], 1)
	assert.Len(t, r.Servers["ns/q"], 2, "a snapshot handed out never changes")
	s.onPodDelete(newPod("q-pserver", memberOf("q", v1.RolePserver)))
	assert.NotContains(t, s.InquiryResource().Servers, "ns/q")
}

func TestQuotaHardIsTheTightestHardLimit(t *testing.T) {
	s := newTracker(Config{})
	quota := func(name, cpu, used string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu)}},
			Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(used)}}}
	}
	assert.Equal(t, snapshot.NoQuota, s.InquiryResource().HardQuota("team"))
	s.onQuota(quota("a", "10", "9"))
	s.onQuota(quota("b", "12", "1"))
	r := s.InquiryResource()
	assert.Equal(t, int64(10000), r.HardQuota("team").Requests.CPUMilli, "the smallest hard limit")
	assert.Equal(t, int64(1000), r.Quota("team").Requests.CPUMilli, "the smallest room left")
	assert.Equal(t, int64(snapshot.Unlimited), r.HardQuota("team").Pods)
	assert.Equal(t, r.QuotaHard, r.DeepCopy().QuotaHard)
	s.onQuotaDelete(quota("a", "10", "9"))
	assert.Equal(t, int64(12000), s.InquiryResource().HardQuota("team").Requests.CPUMilli)
}
