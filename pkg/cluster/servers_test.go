package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestServersListEachJobsMastersAndPservers(t *testing.T) {
	s := newTracker(Config{})
	s.onNode(builders.Node("n1", "8", "8Gi"))
	s.onPod(builders.Pod("q-master", builders.MemberOf("q", v1.RoleMaster), builders.OnNode("n1"), builders.CreatedAfter(2), builders.Requests("1", "1Gi")))
	s.onPod(builders.Pod("q-pserver", builders.MemberOf("q", v1.RolePserver), builders.OnNode("n1"), builders.CreatedAfter(1), builders.Requests("2", "1Gi")))
	s.onPod(builders.Pod("q-trainer", builders.TrainerOf("q"), builders.OnNode("n1"), builders.CreatedAfter(1)))
	s.onPod(builders.Pod("r-pserver", builders.MemberOf("r", v1.RolePserver), builders.OnNode("n1"), builders.Terminating()))
	s.onPod(builders.Pod("stray", builders.OnNode("n1")))

	r := s.InquiryResource()
	require.Len(t, r.Servers["ns/q"], 2)
	assert.Equal(t, "q-pserver", r.Servers["ns/q"][0].Name, "oldest first")
	assert.Equal(t, "n1", r.Servers["ns/q"][0].Node)
	assert.Equal(t, snapshot.Resources{CPUMilli: 2000, MemoryMega: 1024}, r.Servers["ns/q"][0].Request)
	assert.Equal(t, "q-master", r.Servers["ns/q"][1].Name)
	assert.NotContains(t, r.Servers, "ns/r", "a terminating pserver is going, not the job's")
	assert.Len(t, r.Trainers["ns/q"], 1, "trainers stay apart")

	// Only the job that changed is built anew; a deleted pod leaves.
	s.onPodDelete(builders.Pod("q-master", builders.MemberOf("q", v1.RoleMaster)))
	next := s.InquiryResource()
	require.Len(t, next.Servers["ns/q"], 1)
	assert.Len(t, r.Servers["ns/q"], 2, "a snapshot handed out never changes")
	s.onPodDelete(builders.Pod("q-pserver", builders.MemberOf("q", v1.RolePserver)))
	assert.NotContains(t, s.InquiryResource().Servers, "ns/q")
}

func TestQuotaHardIsTheTightestHardLimit(t *testing.T) {
	s := newTracker(Config{})
	assert.Equal(t, snapshot.NoQuota, s.InquiryResource().HardQuota("team"))
	s.onQuota(teamQuota("a", "10", "9"))
	s.onQuota(teamQuota("b", "12", "1"))
	r := s.InquiryResource()
	assert.Equal(t, int64(10000), r.HardQuota("team").Requests.CPUMilli, "the smallest hard limit")
	assert.Equal(t, int64(1000), r.Quota("team").Requests.CPUMilli, "the smallest room left")
	assert.Equal(t, int64(snapshot.Unlimited), r.HardQuota("team").Pods)
	assert.Equal(t, r.QuotaHard, r.DeepCopy().QuotaHard)
	s.onQuotaDelete(teamQuota("a", "10", "9"))
	assert.Equal(t, int64(12000), s.InquiryResource().HardQuota("team").Requests.CPUMilli)
}
