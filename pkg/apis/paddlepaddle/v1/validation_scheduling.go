package v1

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nodeSelector checks the pods' node selector as the API server checks
// labels: qualified names as keys, label values as values.
func nodeSelector(p *field.Path, selector map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(selector)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(selector[k]) {
			errs = append(errs, field.Invalid(p.Key(k), selector[k], msg))
		}
	}
	return errs
}

// tolerations checks the pods' tolerations as the API server checks a pod's:
// keys are label names, an empty key needs the Exists operator (it tolerates
// every taint), Equal compares with a label value and Exists with none,
// tolerationSeconds only with the NoExecute effect, and the effect, when
// set, is one a taint can have. The Lt and Gt operators are refused: the API
// server takes them only with an alpha feature gate
// (TaintTolerationComparisonOperators) that is off by default.
func tolerations(p *field.Path, ts []corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
		} else if t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "operator must be Exists when key is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "effect must be 'NoExecute' when tolerationSeconds is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, "value must be empty when operator is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

// affinity checks the pods' affinity as the API server checks a pod's.
func affinity(p *field.Path, a *corev1.Affinity) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(rp, "must have at least one node selector term"))
			}
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, nodeSelectorTerm(rp.Index(i), term, true)...)
			}
		}
		pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			errs = append(errs, weight(pp.Index(i).Child("weight"), term.Weight)...)
			// Preferred terms may hold any value: they only weigh nodes.
			errs = append(errs, nodeSelectorTerm(pp.Index(i).Child("preference"), term.Preference, false)...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, podAffinityTerms(p.Child("podAffinity"), pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, podAffinityTerms(p.Child("podAntiAffinity"), pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)...)
	}
	return errs
}

// nodeSelectorTerm checks a node affinity term: label expressions with an
// operator and the values it needs (label values, when labelValues), and
// field expressions, which may only name a node (metadata.name In or NotIn
// one node name).
func nodeSelectorTerm(p *field.Path, term corev1.NodeSelectorTerm, labelValues bool) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified when operator is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(req.Values) > 0 {
				errs = append(errs, field.Forbidden(rp.Child("values"), "may not be specified when operator is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified single value when operator is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(req.Key, rp.Child("key"))...)
		if labelValues {
			for j, v := range req.Values {
				for _, msg := range validation.IsValidLabelValue(v) {
					errs = append(errs, field.Invalid(rp.Child("values").Index(j), v, msg))
				}
			}
		}
	}
	for i, req := range term.MatchFields {
		rp := p.Child("matchFields").Index(i)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be only one value when operator is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		if req.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(rp.Child("key"), req.Key, "not a valid field selector key"))
			continue
		}
		for j, v := range req.Values {
			for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
				errs = append(errs, field.Invalid(rp.Child("values").Index(j), v, msg))
			}
		}
	}
	return errs
}

// podAffinityTerms checks the required and the weighted terms of a pod
// affinity or anti-affinity.
func podAffinityTerms(p *field.Path, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("requiredDuringSchedulingIgnoredDuringExecution")
	for i, term := range required {
		errs = append(errs, podAffinityTerm(rp.Index(i), term)...)
	}
	pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i, term := range preferred {
		errs = append(errs, weight(pp.Index(i).Child("weight"), term.Weight)...)
		errs = append(errs, podAffinityTerm(pp.Index(i).Child("podAffinityTerm"), term.PodAffinityTerm)...)
	}
	return errs
}

// podAffinityTerm checks one pod affinity term: valid selectors, namespace
// names, a topology key that is a label name, and label keys that the API
// server can add to the selector when it creates the pod. It adds
// matchLabelKeys as In and mismatchLabelKeys as NotIn expressions, so a key
// of matchLabelKeys must be in neither the selector nor mismatchLabelKeys.
func podAffinityTerm(p *field.Path, term corev1.PodAffinityTerm) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, p.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(p.Child("namespaces"), ns, msg))
		}
	}
	selectorKeys := sets.New[string]()
	if sel := term.LabelSelector; sel != nil {
		selectorKeys.Insert(slices.Collect(maps.Keys(sel.MatchLabels))...)
		for _, e := range sel.MatchExpressions {
			selectorKeys.Insert(e.Key)
		}
	}
	mismatch := sets.New(term.MismatchLabelKeys...)
	for _, lk := range []struct {
		name  string
		keys  []string
		match bool
	}{{"matchLabelKeys", term.MatchLabelKeys, true}, {"mismatchLabelKeys", term.MismatchLabelKeys, false}} {
		kp := p.Child(lk.name)
		if len(lk.keys) > 0 && term.LabelSelector == nil {
			errs = append(errs, field.Forbidden(kp, "must not be specified when labelSelector is not set"))
			continue
		}
		for i, k := range lk.keys {
			errs = append(errs, metav1validation.ValidateLabelName(k, kp.Index(i))...)
			if lk.match && selectorKeys.Has(k) {
				errs = append(errs, field.Invalid(kp.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
			}
			if lk.match && mismatch.Has(k) {
				errs = append(errs, field.Invalid(kp.Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
			}
		}
	}
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(term.TopologyKey, p.Child("topologyKey"))...)
	}
	return errs
}

// weight checks a preferred term's weight.
func weight(p *field.Path, w int32) field.ErrorList {
	if w < 1 || w > 100 {
		return field.ErrorList{field.Invalid(p, w, "must be in the range 1-100")}
	}
	return nil
}
