package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	b "github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestAdmittedPodSpecPricing(t *testing.T) {
	defaults := b.LimitRange("defaults", "ns", b.ContainerDefaults([]string{"cpu", "2", "memory", "2Gi"}, []string{"cpu", "500m", "memory", "1Gi"}))
	limitOnly := b.LimitRange("limit-only", "ns", b.ContainerDefaults([]string{"cpu", "1"}, nil))
	podType := b.LimitRange("pod-type", "ns", func(lr *corev1.LimitRange) {
		lr.Spec.Limits = append(lr.Spec.Limits, corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: b.CPUMemory("8", "")})
	})
	cases := []struct {
		name     string
		pod      *corev1.Pod
		ranges   []*corev1.LimitRange
		overhead corev1.ResourceList
		req, lim snapshot.Resources
	}{
		{name: "no LimitRange: a container without requests costs nothing", pod: b.Pod("p"),
			req: snapshot.Resources{}, lim: snapshot.Resources{}},
		{name: "no LimitRange: a limit alone is not priced as a request (unchanged)", pod: b.Pod("p", b.Limits("1", "")),
			req: snapshot.Resources{}, lim: snapshot.Resources{CPUMilli: 1000}},
		{name: "defaultRequest and default fill an empty container", pod: b.Pod("p"), ranges: []*corev1.LimitRange{defaults},
			req: snapshot.Resources{CPUMilli: 500, MemoryMega: 1024}, lim: snapshot.Resources{CPUMilli: 2000, MemoryMega: 2048}},
		{name: "stated requests and limits win over the defaults", pod: b.Pod("p", b.Requests("100m", "64Mi"), b.Limits("200m", "128Mi")),
			ranges: []*corev1.LimitRange{defaults},
			req:    snapshot.Resources{CPUMilli: 100, MemoryMega: 64}, lim: snapshot.Resources{CPUMilli: 200, MemoryMega: 128}},
		{name: "a stated limit is the request before defaults apply", pod: b.Pod("p", b.Limits("3", "")), ranges: []*corev1.LimitRange{defaults},
			req: snapshot.Resources{CPUMilli: 3000, MemoryMega: 1024}, lim: snapshot.Resources{CPUMilli: 3000, MemoryMega: 2048}},
		{name: "a default without defaultRequest is the request too", pod: b.Pod("p"), ranges: []*corev1.LimitRange{limitOnly},
			req: snapshot.Resources{CPUMilli: 1000}, lim: snapshot.Resources{CPUMilli: 1000}},
		{name: "every app container is defaulted", pod: b.Pod("p", b.Container("", "")), ranges: []*corev1.LimitRange{defaults},
			req: snapshot.Resources{CPUMilli: 1000, MemoryMega: 2048}, lim: snapshot.Resources{CPUMilli: 4000, MemoryMega: 4096}},
		{name: "an init container is defaulted and runs alone", pod: b.Pod("p", b.Requests("100m", "64Mi"), b.Init("", "")),
			ranges: []*corev1.LimitRange{defaults},
			req:    snapshot.Resources{CPUMilli: 500, MemoryMega: 1024}, lim: snapshot.Resources{CPUMilli: 2000, MemoryMega: 2048}},
		{name: "a sidecar is defaulted and adds to the app containers", pod: b.Pod("p", b.Requests("100m", "64Mi"), b.Limits("100m", "64Mi"), b.Sidecar("", "")),
			ranges: []*corev1.LimitRange{defaults},
			req:    snapshot.Resources{CPUMilli: 600, MemoryMega: 1088}, lim: snapshot.Resources{CPUMilli: 2100, MemoryMega: 2112}},
		{name: "the first LimitRange naming a resource wins", pod: b.Pod("p"), ranges: []*corev1.LimitRange{limitOnly, defaults},
			req: snapshot.Resources{CPUMilli: 1000, MemoryMega: 1024}, lim: snapshot.Resources{CPUMilli: 1000, MemoryMega: 2048}},
		{name: "a Pod-type item sets no container default", pod: b.Pod("p"), ranges: []*corev1.LimitRange{podType},
			req: snapshot.Resources{}, lim: snapshot.Resources{}},
		{name: "RuntimeClass overhead is added to requests", pod: b.Pod("p", b.Requests("1", "1Gi")), overhead: b.CPUMemory("250m", "128Mi"),
			req: snapshot.Resources{CPUMilli: 1250, MemoryMega: 1152}, lim: snapshot.Resources{}},
		{name: "a template's own overhead is kept", pod: b.Pod("p", b.Requests("1", ""), b.Overhead("100m", "")), overhead: b.CPUMemory("250m", ""),
			req: snapshot.Resources{CPUMilli: 1100}, lim: snapshot.Resources{}},
		{name: "defaults and overhead together", pod: b.Pod("p"), ranges: []*corev1.LimitRange{defaults}, overhead: b.CPUMemory("250m", ""),
			req: snapshot.Resources{CPUMilli: 750, MemoryMega: 1024}, lim: snapshot.Resources{CPUMilli: 2250, MemoryMega: 2048}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			tr := newTracker(Config{})
			req, lim := tr.PodRequestAndLimits(AdmittedPodSpec(&tc.pod.Spec, tc.ranges, tc.overhead))
			assert.Equal(t, tc.req, req, "requests")
			assert.Equal(t, tc.lim, lim, "limits")
			assert.Equal(t, before, tc.pod, "the template is never changed")
		})
	}
}

func TestAdmittedPodSpecUnchangedWithoutRanges(t *testing.T) {
	spec := &b.Pod("p", b.Requests("1", "")).Spec
	assert.Same(t, spec, AdmittedPodSpec(spec, nil, nil))
}

func TestTrackerPricesTemplatesWithTheNamespacesLimitRangesAndRuntimeClass(t *testing.T) {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
		Overhead: &nodev1.Overhead{PodFixed: b.CPUMemory("250m", "")}}
	kube := fake.NewClientset(
		b.LimitRange("b-defaults", "ns", b.ContainerDefaults([]string{"cpu", "2"}, []string{"cpu", "500m"})),
		b.LimitRange("a-memory", "ns", b.ContainerDefaults(nil, []string{"memory", "1Gi", "cpu", "100m"})),
		rc)
	inf := informers.NewSharedInformerFactory(kube, 0)
	tr, err := New(Config{PodInformer: inf.Core().V1().Pods(), NodeInformer: inf.Core().V1().Nodes(),
		LimitRangeInformer: inf.Core().V1().LimitRanges(), RuntimeClassInformer: inf.Node().V1().RuntimeClasses()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); inf.Shutdown() })
	inf.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), tr.HasSynced))

	spec := &b.Pod("p").Spec
	req, lim := tr.AdmittedPodRequestAndLimits("ns", spec)
	assert.Equal(t, snapshot.Resources{CPUMilli: 100, MemoryMega: 1024}, req, "a-memory is read first: its cpu defaultRequest wins")
	assert.Equal(t, snapshot.Resources{CPUMilli: 2000}, lim)

	req, lim = tr.AdmittedPodRequestAndLimits("other", spec)
	assert.Equal(t, snapshot.Resources{}, req, "another namespace's LimitRanges do not apply")
	assert.Equal(t, snapshot.Resources{}, lim)

	kata, missing := "kata", "missing"
	withRC := spec.DeepCopy()
	withRC.RuntimeClassName = &kata
	req, _ = tr.AdmittedPodRequestAndLimits("other", withRC)
	assert.Equal(t, snapshot.Resources{CPUMilli: 250}, req, "the RuntimeClass's overhead")
	withRC.RuntimeClassName = &missing
	req, _ = tr.AdmittedPodRequestAndLimits("other", withRC)
	assert.Equal(t, snapshot.Resources{}, req, "an unknown RuntimeClass adds nothing (the API server refuses such a pod)")
}
