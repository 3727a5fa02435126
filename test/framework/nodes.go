package framework

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/paddlepaddle/edl/test/kwok"
)

// GPUResource is the extended resource name nodes advertise their GPUs as.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Defaults for NodeSpec fields left empty.
const (
	DefaultNodeCPU    = "32"
	DefaultNodeMemory = "256Gi"
	DefaultNodePods   = 110
)

// nodeReadyTimeout bounds the wait for new nodes when ctx has no deadline.
const nodeReadyTimeout = 2 * time.Minute

// NodeSpec describes fake nodes that kwok runs.
type NodeSpec struct {
	// Name of the node, or the name prefix when Count > 1: Name-0 ... Name-(Count-1).
	Name string
	// CPU and Memory are resource quantities ("18", "100Gi"); empty means
	// DefaultNodeCPU and DefaultNodeMemory.
	CPU, Memory string
	// Pods is the most pods the node takes; 0 means DefaultNodePods.
	Pods int
	// GPU is the number of nvidia.com/gpu the node offers; 0 offers none.
	GPU int64
	// Labels are added to the node's well-known labels.
	Labels map[string]string
	// Taints keep pods without a matching toleration off the node, say to
	// give one test a node of its own.
	Taints []corev1.Taint
	// Count is the number of such nodes; 0 means 1.
	Count int
}

// names returns the node names the spec stands for.
func (s NodeSpec) names() []string {
	if s.Count <= 1 {
		return []string{s.Name}
	}
	names := make([]string, s.Count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", s.Name, i)
	}
	return names
}

// nodes builds the Node objects of the spec: annotated for kwok, with
// capacity and allocatable set, so the scheduler sees them as created.
func (s NodeSpec) nodes() ([]*corev1.Node, error) {
	if s.Name == "" {
		return nil, fmt.Errorf("node spec without a name")
	}
	resources := corev1.ResourceList{}
	for name, q := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:    cmp.Or(s.CPU, DefaultNodeCPU),
		corev1.ResourceMemory: cmp.Or(s.Memory, DefaultNodeMemory),
	} {
		v, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, fmt.Errorf("node %s: %s %q: %w", s.Name, name, q, err)
		}
		resources[name] = v
	}
	pods := s.Pods
	if pods == 0 {
		pods = DefaultNodePods
	}
	resources[corev1.ResourcePods] = *resource.NewQuantity(int64(pods), resource.DecimalSI)
	if s.GPU > 0 {
		resources[GPUResource] = *resource.NewQuantity(s.GPU, resource.DecimalSI)
	}

	var nodes []*corev1.Node
	for _, name := range s.names() {
		labels := map[string]string{
			corev1.LabelHostname:   name,
			corev1.LabelOSStable:   "linux",
			corev1.LabelArchStable: "amd64",
			"type":                 "kwok",
		}
		maps.Copy(labels, s.Labels)
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      labels,
				Annotations: map[string]string{kwok.NodeAnnotation: kwok.NodeAnnotationValue},
			},
			Spec: corev1.NodeSpec{Taints: slices.Clone(s.Taints)},
			Status: corev1.NodeStatus{
				Capacity:    resources.DeepCopy(),
				Allocatable: resources.DeepCopy(),
				Phase:       corev1.NodeRunning,
			},
		})
	}
	return nodes, nil
}

// AddNodes creates the nodes the specs describe and waits until kwok has
// made every one Ready and schedulable.
func (cp *ControlPlane) AddNodes(ctx context.Context, specs ...NodeSpec) error {
	var names []string
	for _, spec := range specs {
		nodes, err := spec.nodes()
		if err != nil {
			return err
		}
		for _, node := range nodes {
			// A node's status may be set on create, unlike most objects'.
			if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create node %s: %w", node.Name, err)
			}
			names = append(names, node.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return cp.waitNodesReady(ctx, names)
}

// waitNodesReady watches nodes until all of names are Ready without a
// not-ready or unreachable taint.
func (cp *ControlPlane) waitNodesReady(ctx context.Context, names []string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, nodeReadyTimeout)
		defer cancel()
	}
	pending := map[string]bool{}
	for _, name := range names {
		pending[name] = true
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return cp.Client.CoreV1().Nodes().List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return cp.Client.CoreV1().Nodes().Watch(ctx, options)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		node, ok := ev.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		if _, wanted := pending[node.Name]; !wanted {
			return false, nil
		}
		pending[node.Name] = ev.Type == watch.Deleted || !nodeReady(node)
		for _, p := range pending {
			if p {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var waiting []string
		for name, p := range pending {
			if p {
				waiting = append(waiting, name)
			}
		}
		slices.Sort(waiting)
		return fmt.Errorf("wait for nodes to be Ready (still waiting for %s): %w", strings.Join(waiting, ", "), err)
	}
	return nil
}

// nodeReady reports whether a node is Ready and carries none of the taints
// the node-lifecycle controller puts on nodes that are not.
func nodeReady(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DeleteNode deletes a node and waits until it is gone. Its pods are left to
// the pod garbage collector, as when a real node disappears.
func (cp *ControlPlane) DeleteNode(ctx context.Context, name string) error {
	err := cp.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("wait for node %s to be gone: %w", name, err)
	}
	return nil
}
