package snapshot

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// Placement is what restricts the nodes a pod may run on, as kube-scheduler's
// NodeAffinity and TaintToleration filters read it: the node selector, the
// required node affinity, and the tolerations. The zero Placement may run on
// every node without a NoSchedule or NoExecute taint.
//
// A Placement is shared, never modified: the pods of one ReplicaSet or
// Deployment have equal placements, and the planner evaluates each distinct
// one once per node class (see Key).
type Placement struct {
	NodeSelector map[string]string
	// Required is spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.
	Required    *corev1.NodeSelector
	Tolerations []corev1.Toleration
	// key identifies equal placements; "" for the zero Placement.
	key string
}

// PlacementOf returns the placement of a pod with this spec, nil when the pod
// may run anywhere untainted.
func PlacementOf(spec *corev1.PodSpec) *Placement {
	var required *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(spec.NodeSelector) == 0 && required == nil && len(spec.Tolerations) == 0 {
		return nil
	}
	p := &Placement{NodeSelector: spec.NodeSelector, Required: required, Tolerations: spec.Tolerations}
	// JSON of maps is sorted by key, so equal placements get equal keys. The
	// tolerations' order does not matter to the scheduler; it rarely differs
	// between pods of one owner, and a different order only costs a second
	// evaluation.
	data, err := json.Marshal(struct {
		S map[string]string    `json:"s,omitempty"`
		R *corev1.NodeSelector `json:"r,omitempty"`
		T []corev1.Toleration  `json:"t,omitempty"`
	}{p.NodeSelector, p.Required, p.Tolerations})
	if err != nil { // these types always marshal
		panic(err)
	}
	p.key = string(data)
	return p
}

// Key identifies p among placements: equal placements have equal keys. The
// nil and zero Placement have the key "".
func (p *Placement) Key() string {
	if p == nil {
		return ""
	}
	return p.key
}

// LabelKeys calls f with every node label key p's selector and required
// affinity read, and reports whether p also matches node fields (a
// matchFields term, which names nodes).
func (p *Placement) LabelKeys(f func(string)) (fields bool) {
	if p == nil {
		return false
	}
	for k := range p.NodeSelector {
		f(k)
	}
	if p.Required != nil {
		for _, t := range p.Required.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				f(e.Key)
			}
			if len(t.MatchFields) > 0 {
				fields = true
			}
		}
	}
	return fields
}
