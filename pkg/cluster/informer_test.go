package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestSnapshotFollowsRealInformers wires the snapshot to informers over a fake
// clientset, the way cmd/edl does, and drives it through the API.
func TestSnapshotFollowsRealInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		builders.Node("n1", "4", "8Gi"),
		builders.Node("n2", "4", "8Gi", builders.Cordoned()),
		fatPod(builders.TrainerOf("job")),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	require.NoError(t, pods.Informer().SetTransform(TransformPod))
	s, err := New(Config{PodInformer: pods, NodeInformer: nodes})
	require.NoError(t, err)
	assert.False(t, s.HasSynced())

	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), s.HasSynced))

	r := s.InquiryResource()
	assert.Equal(t, 1, r.NodeCount)
	// 1 CPU app container + 100m sidecar + 10m overhead.
	assert.Equal(t, map[string]int64{"n1": 4000 - 1110}, r.NodeResources().NodesCPUIdleMilli)
	require.Len(t, r.Trainers["ns/job"], 1)

	cached, ok, err := pods.Informer().GetIndexer().GetByKey("ns/fat")
	require.NoError(t, err)
	require.True(t, ok)
	require.IsType(t, &Pod{}, cached, "the cache holds the transformed pod")
	assert.Equal(t, "n1", cached.(*Pod).NodeName)

	big := builders.Pod("big", builders.Requests("2", "1Gi"), builders.Phase(corev1.PodPending))
	_, err = client.CoreV1().Pods("ns").Create(ctx, big, metav1.CreateOptions{})
	require.NoError(t, err)

	big.Spec.NodeName, big.Status.Phase, big.ResourceVersion = "n1", corev1.PodRunning, "2"
	_, err = client.CoreV1().Pods("ns").Update(ctx, big, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		r := s.InquiryResource()
		return r.NodeResources().NodesCPUIdleMilli["n1"] == 4000-1110-2000 && r.CPURequestMilli == 1110+2000
	}, 5*time.Second, 10*time.Millisecond)

	require.NoError(t, client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}))
	require.NoError(t, client.CoreV1().Pods("ns").Delete(ctx, "fat", metav1.DeleteOptions{}))
	assert.Eventually(t, func() bool {
		r := s.InquiryResource()
		return r.NodeCount == 0 && len(r.NodeResources().NodesCPUIdleMilli) == 0 && r.CPURequestMilli == 0 && len(r.Trainers) == 0
	}, 5*time.Second, 10*time.Millisecond)
}

func TestNewRejectsMissingInformers(t *testing.T) {
	_, err := New(Config{})
	assert.Error(t, err)
}
