package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/paddlepaddle/edl/test/kwok"
)

func TestNodeSpecNodes(t *testing.T) {
	tests := []struct {
		name      string
		spec      NodeSpec
		wantNames []string
		wantRes   map[corev1.ResourceName]string
		wantErr   bool
	}{
		{
			name:      "defaults",
			spec:      NodeSpec{Name: "a"},
			wantNames: []string{"a"},
			wantRes:   map[corev1.ResourceName]string{corev1.ResourceCPU: DefaultNodeCPU, corev1.ResourceMemory: DefaultNodeMemory, corev1.ResourcePods: "110"},
		},
		{
			name:      "count makes a prefix",
			spec:      NodeSpec{Name: "n", Count: 3, CPU: "18", Memory: "100Gi", Pods: 20, GPU: 8},
			wantNames: []string{"n-0", "n-1", "n-2"},
			wantRes:   map[corev1.ResourceName]string{corev1.ResourceCPU: "18", corev1.ResourceMemory: "100Gi", corev1.ResourcePods: "20", GPUResource: "8"},
		},
		{name: "no name", spec: NodeSpec{}, wantErr: true},
		{name: "bad quantity", spec: NodeSpec{Name: "a", CPU: "lots"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, err := tt.spec.nodes()
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
				assert.Equal(t, kwok.NodeAnnotationValue, n.Annotations[kwok.NodeAnnotation], "kwok manages only annotated nodes")
				assert.Equal(t, n.Name, n.Labels[corev1.LabelHostname])
				assert.Len(t, n.Status.Allocatable, len(tt.wantRes))
				for res, want := range tt.wantRes {
					got := n.Status.Allocatable[res]
					assert.Zero(t, got.Cmp(resource.MustParse(want)), "allocatable %s = %s, want %s", res, got.String(), want)
					assert.Equal(t, n.Status.Allocatable[res], n.Status.Capacity[res])
				}
			}
			assert.Equal(t, tt.wantNames, names)
		})
	}
}

func TestDeclaresModule(t *testing.T) {
	assert.True(t, declaresModule([]byte("// x\nmodule github.com/paddlepaddle/edl\n\ngo 1.26\n"), modulePath))
	assert.False(t, declaresModule([]byte("module github.com/paddlepaddle/edl/hack/tools/k8s\n"), modulePath))
}
