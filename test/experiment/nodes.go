package experiment

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Nodes describes how the nodes are filled now: the nodes counted by what
// they hold (web pods, trainers, pservers, other pods bound and not being
// deleted) and the CPU they have left, the most common first, at most top
// kinds — "3w+1t (4 free) ×101, 2w+2t (2 free) ×20, …". It shows where
// the idle CPU of a sample sits.
func (r *Recorder) Nodes(top int) string {
	nodes, _ := r.nodes.List(labels.Everything())
	pods, _ := r.pods.List(labels.Everything())
	return nodeKinds(nodes, pods, top)
}

// nodeKinds is Nodes over the given nodes and pods.
func nodeKinds(nodes []*corev1.Node, pods []*corev1.Pod, top int) string {
	type fill struct {
		web, trainers, pservers, other int
		used                           int64
	}
	byNode := map[string]*fill{}
	for _, n := range nodes {
		byNode[n.Name] = &fill{}
	}
	for _, p := range pods {
		f := byNode[p.Spec.NodeName]
		if f == nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		switch {
		case p.Labels[WebLabel] == WebName:
			f.web++
		case p.Labels[v1.LabelTrainer] != "":
			f.trainers++
		case p.Labels[v1.LabelPserver] != "":
			f.pservers++
		default:
			f.other++
		}
		f.used += podCPUMilli(p)
	}
	count := map[string]int{}
	for _, n := range nodes {
		f := byNode[n.Name]
		var parts []string
		for _, x := range []struct {
			n    int
			kind string
		}{{f.web, "w"}, {f.trainers, "t"}, {f.pservers, "p"}, {f.other, "o"}} {
			if x.n > 0 {
				parts = append(parts, fmt.Sprintf("%d%s", x.n, x.kind))
			}
		}
		if len(parts) == 0 {
			parts = []string{"empty"}
		}
		free := n.Status.Allocatable.Cpu().MilliValue() - f.used
		count[fmt.Sprintf("%s (%g free)", strings.Join(parts, "+"), float64(free)/1000)]++
	}
	kinds := make([]string, 0, len(count))
	for k := range count {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var out []string
	for i, k := range kinds {
		if i == top {
			out = append(out, fmt.Sprintf("… %d more kinds", len(kinds)-top))
			break
		}
		out = append(out, fmt.Sprintf("%s ×%d", k, count[k]))
	}
	return strings.Join(out, ", ")
}
