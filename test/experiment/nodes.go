package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
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
		if f == nil || !isLive(p) {
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

// trainerRooms is the room the nodes have left for trainers: what their
// allocatable leaves once every live pod bound to them but the trainers
// runs, counted by kind of room, and the CPU those pods request. Trainers
// are left out: the trainers' bound packs them anew into these rooms; so
// are the web pods dropped (by node) above the desired count (capWeb).
func trainerRooms(nodes []*corev1.Node, pods []*corev1.Pod, dropped map[string]int) (rooms []Room, heldMilli int64) {
	skip := maps.Clone(dropped)
	free := make(map[string]*NodeShape, len(nodes))
	for _, n := range nodes {
		a := n.Status.Allocatable
		gpu := a[framework.GPUResource]
		free[n.Name] = &NodeShape{CPUMilli: a.Cpu().MilliValue(), MemMiB: a.Memory().Value() >> 20, GPU: gpu.Value(), Pods: int(a.Pods().Value())}
	}
	for _, p := range pods {
		f := free[p.Spec.NodeName]
		if f == nil || p.Labels[v1.LabelTrainer] != "" || !isLive(p) {
			continue
		}
		if p.Labels[WebLabel] == WebName && skip[p.Spec.NodeName] > 0 {
			skip[p.Spec.NodeName]--
			continue
		}
		cpu := podCPUMilli(p)
		heldMilli += cpu
		f.CPUMilli -= cpu
		f.MemMiB -= podMemMiB(p)
		f.GPU -= podGPU(p)
		f.Pods = podsLeft(f.Pods, 1)
	}
	count := map[NodeShape]int{}
	for _, n := range nodes {
		count[*free[n.Name]]++
	}
	for shape, n := range count {
		rooms = append(rooms, Room{Free: shape, Nodes: n})
	}
	slices.SortFunc(rooms, func(a, b Room) int {
		return cmp.Or(cmp.Compare(a.Free.CPUMilli, b.Free.CPUMilli), cmp.Compare(a.Free.MemMiB, b.Free.MemMiB),
			cmp.Compare(a.Free.GPU, b.Free.GPU), cmp.Compare(a.Free.Pods, b.Free.Pods))
	})
	return rooms, heldMilli
}

// podMemMiB is the pod's memory request in MiB, as podCPUMilli counts CPU.
func podMemMiB(p *corev1.Pod) int64 {
	return podRequest(p, func(r corev1.ResourceList) int64 { return r.Memory().Value() }) >> 20
}
