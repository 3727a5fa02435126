package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

func placementOf(muts ...func(*corev1.PodSpec)) *snapshot.Placement {
	spec := &corev1.PodSpec{}
	for _, m := range muts {
		m(spec)
	}
	return snapshot.PlacementOf(spec)
}

func selecting(kv ...string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func requiring(terms ...corev1.NodeSelectorTerm) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func tolerating(ts ...corev1.Toleration) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.Tolerations = ts }
}

func TestEligibilityFollowsTheSchedulersNodeFilters(t *testing.T) {
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	nodes := []snapshot.Node{
		{Name: "cpu-0", Labels: map[string]string{"pool": "cpu", "cores": "32"}},
		{Name: "cpu-1", Labels: map[string]string{"pool": "cpu", "cores": "64"}},
		{Name: "gpu-0", Labels: map[string]string{"pool": "gpu", "cores": "64"}, Taints: []corev1.Taint{gpuTaint}},
		{Name: "drain-0", Labels: map[string]string{"pool": "cpu", "cores": "32"},
			Taints: []corev1.Taint{{Key: "drain", Effect: corev1.TaintEffectNoExecute}}},
		{Name: "soft-0", Labels: map[string]string{"pool": "cpu", "cores": "32"},
			Taints: []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}},
	}
	cases := []struct {
		name      string
		placement *snapshot.Placement
		want      []string
	}{
		{"no constraints: every node without a NoSchedule or NoExecute taint", nil, []string{"cpu-0", "cpu-1", "soft-0"}},
		{"node selector", placementOf(selecting("pool", "cpu")), []string{"cpu-0", "cpu-1", "soft-0"}},
		{"node selector on a tainted pool without toleration", placementOf(selecting("pool", "gpu")), nil},
		{"node selector and toleration", placementOf(selecting("pool", "gpu"), tolerating(corev1.Toleration{
			Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "present", Effect: corev1.TaintEffectNoSchedule})),
			[]string{"gpu-0"}},
		{"a toleration of the wrong value", placementOf(tolerating(corev1.Toleration{
			Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "absent", Effect: corev1.TaintEffectNoSchedule})),
			[]string{"cpu-0", "cpu-1", "soft-0"}},
		{"tolerate everything", placementOf(tolerating(corev1.Toleration{Operator: corev1.TolerationOpExists})),
			[]string{"cpu-0", "cpu-1", "drain-0", "gpu-0", "soft-0"}},
		{"NoExecute needs its own toleration", placementOf(tolerating(corev1.Toleration{Key: "drain", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule})), []string{"cpu-0", "cpu-1", "soft-0"}},
		{"affinity In", placementOf(requiring(expr("cores", corev1.NodeSelectorOpIn, "64"))), []string{"cpu-1"}},
		{"affinity NotIn", placementOf(requiring(expr("cores", corev1.NodeSelectorOpNotIn, "64"))), []string{"cpu-0", "soft-0"}},
		{"affinity Exists", placementOf(requiring(expr("pool", corev1.NodeSelectorOpExists))), []string{"cpu-0", "cpu-1", "soft-0"}},
		{"affinity DoesNotExist", placementOf(requiring(expr("pool", corev1.NodeSelectorOpDoesNotExist))), nil},
		{"affinity Gt", placementOf(requiring(expr("cores", corev1.NodeSelectorOpGt, "40"))), []string{"cpu-1"}},
		{"affinity Lt", placementOf(requiring(expr("cores", corev1.NodeSelectorOpLt, "40"))), []string{"cpu-0", "soft-0"}},
		{"terms are ORed", placementOf(requiring(expr("cores", corev1.NodeSelectorOpIn, "64"), expr("pool", corev1.NodeSelectorOpIn, "cpu"))),
			[]string{"cpu-0", "cpu-1", "soft-0"}},
		{"matchFields names nodes", placementOf(requiring(
			corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"cpu-1"}}}},
			corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-0"}}}},
			corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gone"}}}},
		)), []string{"cpu-1"}},
		{"matchFields NotIn", placementOf(requiring(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"cpu-1"}}}})), []string{"cpu-0", "soft-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ps []*snapshot.Placement
			if tc.placement != nil {
				ps = append(ps, tc.placement)
			}
			c := newClasses(nodes, ps)
			e := c.set(tc.placement)
			var got []string
			for i := range nodes {
				if e.has(int32(i), c.classOf[i]) {
					got = append(got, nodes[i].Name)
				}
			}
			assert.ElementsMatch(t, tc.want, got)
			assert.Equal(t, len(tc.want) == 0, e.empty())
			assert.Same(t, e, c.set(tc.placement), "evaluated once per plan")
		})
	}
}

func TestNodesFallIntoClassesByTheLabelsThatMatter(t *testing.T) {
	var nodes []snapshot.Node
	for i := range 100 {
		pool := []string{"a", "b"}[i%2]
		nodes = append(nodes, snapshot.Node{Name: string(rune('A'+i/26)) + string(rune('a'+i%26)),
			Labels: map[string]string{"kubernetes.io/hostname": string(rune(i)), "pool": pool}})
	}
	c := newClasses(nodes, []*snapshot.Placement{placementOf(selecting("pool", "a"))})
	require.Len(t, c.members, 2, "the hostname label is read by no placement")
	c = newClasses(nodes, nil)
	require.Len(t, c.members, 1)
}

func TestFitterFindsTheFirstEligibleNodeInNameOrder(t *testing.T) {
	nodes := []snapshot.Node{
		{Name: "a", Labels: map[string]string{"pool": "x"}},
		{Name: "b", Labels: map[string]string{"pool": "y"}},
		{Name: "c", Labels: map[string]string{"pool": "x"}},
		{Name: "d", Labels: map[string]string{"pool": "y"}},
	}
	onY := placementOf(selecting("pool", "y"))
	c := newClasses(nodes, []*snapshot.Placement{onY})
	f := newFitter(c, []vec{{4, 4, 0}, {1, 1, 0}, {4, 4, 0}, {4, 4, 0}})
	assert.Equal(t, 0, f.firstFit(vec{2, 2, 0}, c.allNodes()))
	assert.Equal(t, 3, f.firstFit(vec{2, 2, 0}, c.set(onY)))
	f.take(3, vec{3, 3, 0})
	assert.Equal(t, -1, f.firstFit(vec{2, 2, 0}, c.set(onY)))
	f.set(1, vec{2, 2, 0})
	f.take(0, vec{4, 4, 0})
	assert.Equal(t, 1, f.firstFit(vec{2, 2, 0}, c.set(onY)))
	assert.Equal(t, 1, f.firstFit(vec{2, 2, 0}, c.allNodes()), "b is before c")
}
