package planner

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// classes groups the planner's nodes into classes that every placement of
// the plan treats alike: nodes with the same values of the labels some
// placement reads and the same scheduling taints. A cluster of thousands of
// nodes has a handful of pools, so "may this pod run here" is evaluated once
// per placement and class, not per node.
//
// A placement that matches node fields (a matchFields term names nodes, as
// DaemonSet pods do) is evaluated per node instead, and only on the nodes it
// names when every term names them with In.
type classes struct {
	nodes   []snapshot.Node
	classOf []int32   // node index → class
	members [][]int32 // class → its node indexes, ascending
	sets    map[string]*eligible
	// obj is the representative node of each class, built when first needed.
	obj []*corev1.Node
}

// eligible is the set of nodes a placement may use.
type eligible struct {
	// classes lists the eligible classes, ascending; nodes, when perNode is
	// set, the eligible nodes instead.
	classes []int32
	nodes   []int32
	perNode bool
}

// allNodes is the set of a placement that may run anywhere: every class.
func (c *classes) allNodes() *eligible { return c.set(nil) }

// newClasses groups nodes by the label keys the placements read and by
// their taints.
func newClasses(nodes []snapshot.Node, placements []*snapshot.Placement) *classes {
	keySet := map[string]bool{}
	for _, p := range placements {
		p.LabelKeys(func(k string) { keySet[k] = true })
	}
	keys := make([]string, 0, len(keySet))
	for k := range keySet {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	c := &classes{nodes: nodes, classOf: make([]int32, len(nodes)), sets: map[string]*eligible{}}
	byKey := map[string]int32{}
	var b strings.Builder
	for i := range nodes {
		b.Reset()
		for _, k := range keys {
			if v, ok := nodes[i].Labels[k]; ok {
				b.WriteString(v)
				b.WriteByte(1)
			} else {
				b.WriteByte(2)
			}
		}
		for _, t := range nodes[i].Taints {
			b.WriteByte(3)
			b.WriteString(t.Key)
			b.WriteByte(0)
			b.WriteString(t.Value)
			b.WriteByte(0)
			b.WriteString(string(t.Effect))
		}
		id, ok := byKey[b.String()]
		if !ok {
			id = int32(len(c.members)) // #nosec G115 -- at most one class per node: far fewer than 2^31
			byKey[b.String()] = id
			c.members = append(c.members, nil)
		}
		c.classOf[i] = id
		c.members[id] = append(c.members[id], int32(i)) // #nosec G115 -- a node index
	}
	c.obj = make([]*corev1.Node, len(c.members))
	return c
}

// set returns the nodes placement p may use, evaluating it once per class (or
// per named node) and caching the answer for the plan.
func (c *classes) set(p *snapshot.Placement) *eligible {
	if e, ok := c.sets[p.Key()]; ok {
		return e
	}
	e := &eligible{}
	if p.LabelKeys(func(string) {}) {
		e.perNode = true
		candidates := namedNodes(p)
		for i := range c.nodes {
			if candidates != nil && !candidates[c.nodes[i].Name] {
				continue
			}
			if mayRun(p, nodeObject(&c.nodes[i])) {
				e.nodes = append(e.nodes, int32(i)) // #nosec G115 -- a node index
			}
		}
	} else {
		for id := range c.members {
			if c.obj[id] == nil {
				c.obj[id] = nodeObject(&c.nodes[c.members[id][0]])
			}
			if mayRun(p, c.obj[id]) {
				e.classes = append(e.classes, int32(id)) // #nosec G115 -- a class index
			}
		}
	}
	c.sets[p.Key()] = e
	return e
}

// empty reports whether no node is eligible.
func (e *eligible) empty() bool { return len(e.classes) == 0 && len(e.nodes) == 0 }

// has reports whether node n (of class cls) is eligible.
func (e *eligible) has(n int32, cls int32) bool {
	if e.perNode {
		_, found := slices.BinarySearch(e.nodes, n)
		return found
	}
	_, found := slices.BinarySearch(e.classes, cls)
	return found
}

// nodeObject builds the part of a Node the scheduler's filters read.
func nodeObject(n *snapshot.Node) *corev1.Node {
	node := &corev1.Node{}
	node.Name = n.Name
	node.Labels = n.Labels
	node.Spec.Taints = n.Taints
	return node
}

// mayRun is the one eligibility test: kube-scheduler's NodeAffinity filter
// (node selector and required node affinity, matchExpressions and
// matchFields) and its TaintToleration filter (NoSchedule and NoExecute
// taints), from k8s.io/component-helpers. Cordoned and NotReady nodes never
// reach the planner.
func mayRun(p *snapshot.Placement, node *corev1.Node) bool {
	if p == nil {
		p = &snapshot.Placement{}
	}
	pod := &corev1.Pod{}
	pod.Spec.NodeSelector = p.NodeSelector
	if p.Required != nil {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: p.Required}}
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, p.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	return !untolerated
}

// namedNodes returns the node names a placement's required affinity is
// limited to when every term names nodes with matchFields metadata.name In;
// nil when some term does not, and every node must be tried.
func namedNodes(p *snapshot.Placement) map[string]bool {
	if p.Required == nil || len(p.Required.NodeSelectorTerms) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, t := range p.Required.NodeSelectorTerms {
		named := false
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn {
				for _, v := range f.Values {
					names[v] = true
				}
				named = true
				break
			}
		}
		if !named {
			return nil
		}
	}
	return names
}

// fitter finds, among the nodes a placement may use, the first one in name
// order with room for a request: a fit index per class, so that a query
// costs O(classes × log nodes).
type fitter struct {
	c     *classes
	free  []vec
	trees []*fitIndex
	pos   []int32 // node index → its leaf in its class's tree
}

func newFitter(c *classes, free []vec) *fitter {
	f := &fitter{c: c, free: free, trees: make([]*fitIndex, len(c.members)), pos: make([]int32, len(free))}
	for id, members := range c.members {
		leaves := make([]vec, len(members))
		for k, n := range members {
			leaves[k] = free[n]
			f.pos[n] = int32(k) // #nosec G115 -- a node index
		}
		f.trees[id] = newFitIndex(leaves)
	}
	return f
}

// set records node n's new free capacity.
func (f *fitter) set(n int, free vec) {
	f.free[n] = free
	f.trees[f.c.classOf[n]].set(int(f.pos[n]), free)
}

// take lowers node n's free capacity by r.
func (f *fitter) take(n int, r vec) { f.set(n, f.free[n].minus(r)) }

// firstFit returns the first node e allows whose free capacity covers r, or
// -1.
func (f *fitter) firstFit(r vec, e *eligible) int {
	if e.perNode {
		for _, n := range e.nodes {
			if r.fitsIn(f.free[n]) {
				return int(n)
			}
		}
		return -1
	}
	best := -1
	for _, id := range e.classes {
		if k := f.trees[id].firstFit(r); k >= 0 {
			if n := int(f.c.members[id][k]); best < 0 || n < best {
				best = n
			}
		}
	}
	return best
}
