package cluster

import (
	"encoding/json"
	"math"
	"slices"
	"time"

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

// Node is what the planner knows of one node that counts: Ready and not
// cordoned. Labels and Taints are the informer's, shared and read-only.
type Node struct {
	Name   string
	Labels map[string]string
	// Taints are the node's NoSchedule and NoExecute taints: the ones that
	// keep pods off it. PreferNoSchedule is only a preference.
	Taints []corev1.Taint
	// Allocatable is status.allocatable; Free is Allocatable minus the
	// requests of the live pods bound to the node, terminating ones
	// included, and can be negative.
	Allocatable, Free Resources
	// Terminating is the part of the requests that pods being deleted hold:
	// it frees once their grace period ends (see TerminatingPod).
	Terminating []TerminatingPod
}

// TerminatingPod is a pod on a counted node that is being deleted.
type TerminatingPod struct {
	Request Resources
	// Deadline is metadata.deletionTimestamp: when the grace period ends.
	Deadline time.Time
	// Trainer: the pod is a trainer of an EDL job, which its ReplicaSet
	// no longer counts.
	Trainer bool
}

// schedulingTaints keeps the taints that keep pods off a node, in a new
// slice; nil when there are none.
func schedulingTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return slices.Clip(out)
}

// Unlimited is a Quota dimension without a hard limit.
const Unlimited = math.MaxInt64

// Quota is the room a namespace's ResourceQuotas leave for new pods: hard
// minus used, the smallest over the namespace's quotas, per dimension;
// Unlimited where no quota sets one. Quotas with scopes or a scope selector
// apply to some pods only and are not modelled.
type Quota struct {
	// Requests is what requests.cpu (or cpu), requests.memory (or memory)
	// and requests.<gpu> leave; Limits what limits.cpu and limits.memory
	// leave (GPU limits equal requests).
	Requests, Limits Resources
	// Pods is what pods (or count/pods) leaves.
	Pods int64
}

// NoQuota is the Quota of a namespace without ResourceQuotas.
var NoQuota = Quota{
	Requests: Resources{CPUMilli: Unlimited, MemoryMega: Unlimited, GPU: Unlimited},
	Limits:   Resources{CPUMilli: Unlimited, MemoryMega: Unlimited, GPU: Unlimited},
	Pods:     Unlimited,
}
