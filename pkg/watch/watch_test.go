package watch

import (
	"context"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/config"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
)

// TestWatchTransformsAndCountsGPUs: the pods the watch caches carry only
// the fields EDL reads (the transforms are installed), the tracker counts
// the configured extended resources as GPUs, and the autoscaler built on the
// watch syncs with it and explains with the planner's options.
func TestWatchTransformsAndCountsGPUs(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
				"example.com/gpu": resource.MustParse("2")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{"big": "annotation"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep"}}}}}
	hosts := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "h-hosts", Labels: map[string]string{v1.LabelMaster: "h"}}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "big"}, Data: map[string]string{"big": "data"}}
	kube := fake.NewClientset(node, pod, hosts, other)
	logger := log.New()
	logger.SetHandler(log.DiscardHandler())
	w, err := New(kube, tjfake.NewClientset(), 0, []string{"example.com/gpu"}, logger)
	require.NoError(t, err)
	maxLoad := 0.5
	scaler := w.Autoscaler((&config.EDLConfiguration{Autoscaler: config.AutoscalerConfiguration{MaxLoadDesired: &maxLoad}}).Planner(),
		kube, tjfake.NewClientset(), nil, logger, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() {
		cancel()
		w.Shutdown()
	}()
	w.Start(ctx)
	require.True(t, scaler.WaitForSync(ctx))

	pods := w.Pods.Informer().GetStore().List()
	require.Len(t, pods, 1)
	require.IsType(t, &cluster.Pod{}, pods[0], "the pod transform keeps what EDL reads")
	assert.Equal(t, "n1", pods[0].(*cluster.Pod).NodeName)

	require.True(t, cache.WaitForCacheSync(ctx.Done(), w.ConfigMaps.Informer().HasSynced))
	cms, err := w.ConfigMaps.Lister().List(labels.Everything())
	require.NoError(t, err)
	require.Len(t, cms, 1, "only the host-discovery ConfigMaps are cached")
	assert.Equal(t, "h-hosts", cms[0].Name)
	cms, err = w.KubeInformers.Core().V1().ConfigMaps().Lister().List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, cms, 1, "the factory hands out the filtered informer")

	report := scaler.Explain()
	assert.Equal(t, int64(2), report.Cluster.Allocatable.GPU, "example.com/gpu counts as GPUs")
	assert.Equal(t, 0.5, report.Options.MaxLoadDesired)
	assert.True(t, report.Options.Preemption, "preemption is on by default")

	off := false
	noPreemption := w.Autoscaler((&config.EDLConfiguration{Autoscaler: config.AutoscalerConfiguration{Preemption: &off}}).Planner(),
		kube, tjfake.NewClientset(), nil, logger, nil)
	require.True(t, noPreemption.WaitForSync(ctx))
	assert.False(t, noPreemption.Explain().Options.Preemption, "autoscaler.preemption reaches the plan's options")
}
