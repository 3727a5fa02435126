package v1

import (
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxNameLength is the longest job name the API server accepts the derived
// objects of: the job's Services <name>-master and <name>-pserver must be
// DNS-1035 labels of at most 63 characters, and "-pserver" is the longer
// suffix. The ReplicaSets (<name>-trainer is as long) and the label values
// (the name itself) fit with it; pod names are the ReplicaSet's name plus a
// random suffix, which the API server cuts to 63 characters.
const MaxNameLength = validation.DNS1035LabelMaxLength - len("-pserver")

// Validate checks a defaulted job with the rules the API server applies to
// the job and to the objects the controller derives from it (ReplicaSets,
// Services, their pods). The CRD's schema checks the same rules where its CEL
// cost budget allows (docs/api.md lists which); the controller calls
// Validate on every sync so that a job the schema let through (created
// before a rule existed, against an older CRD, or breaking a rule only
// Validate checks) fails with a message naming the field instead of hanging
// on objects the API server refuses.
func Validate(job *TrainingJob) field.ErrorList {
	errs := validateName(job.Name)
	spec := &job.Spec
	path := field.NewPath("spec")

	if spec.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), "the job image is required"))
	} else if strings.ContainsAny(spec.Image, " \t\r\n") {
		errs = append(errs, field.Invalid(path.Child("image"), spec.Image, "image must be a container image reference without spaces"))
	}
	var portErrs field.ErrorList
	portErrs = append(portErrs, inRange(path.Child("port"), spec.FirstPort(), 1, 65535)...)
	portErrs = append(portErrs, inRange(path.Child("ports_num"), spec.DensePorts(), 1, 1024)...)
	portErrs = append(portErrs, inRange(path.Child("ports_num_for_sparse"), spec.SparsePorts(), 0, 1024)...)
	if len(portErrs) == 0 && int64(spec.FirstPort())+int64(spec.DensePorts())+int64(spec.SparsePorts())-1 > 65535 {
		portErrs = append(portErrs, field.Invalid(path.Child("port"), spec.FirstPort(), "port + ports_num + ports_num_for_sparse - 1 must not exceed 65535"))
	}
	errs = append(errs, portErrs...)
	errs = append(errs, atLeast(path.Child("passes"), spec.Passes, 0)...)
	errs = append(errs, volumes(path.Child("volumes"), spec.Volumes)...)
	errs = append(errs, volumeMounts(path.Child("volumeMounts"), spec.VolumeMounts, spec.Volumes)...)
	errs = append(errs, nodeSelector(path.Child("nodeSelector"), spec.NodeSelector)...)
	errs = append(errs, tolerations(path.Child("tolerations"), spec.Tolerations)...)
	errs = append(errs, affinity(path.Child("affinity"), spec.Affinity)...)
	if spec.PriorityClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.PriorityClassName) {
			errs = append(errs, field.Invalid(path.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}

	tp := path.Child("trainer")
	errs = append(errs, instances(tp, spec.Trainer.MinInstance, spec.Trainer.MaxInstance)...)
	errs = append(errs, atLeast(tp.Child("passes"), spec.Trainer.Passes, 0)...)
	errs = append(errs, atLeast(tp.Child("max-restarts"), spec.TrainerMaxRestarts(), 0)...)
	errs = append(errs, resources(tp.Child("resources"), spec.Trainer.Resources)...)

	pp := path.Child("pserver")
	errs = append(errs, instances(pp, spec.Pserver.MinInstance, spec.Pserver.MaxInstance)...)
	errs = append(errs, resources(pp.Child("resources"), spec.Pserver.Resources)...)

	errs = append(errs, resources(path.Child("master", "resources"), spec.Master.Resources)...)
	return errs
}

// validateName checks the job's name against the names derived from it.
func validateName(name string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	if len(name) > MaxNameLength {
		return field.ErrorList{field.Invalid(p, name, "metadata.name must be no more than "+strconv.Itoa(MaxNameLength)+
			" characters: the job's Service <name>-pserver must be a DNS-1035 label of at most 63")}
	}
	if len(validation.IsDNS1035Label(name)) > 0 {
		return field.ErrorList{field.Invalid(p, name, "metadata.name must start with a lower-case letter and consist of lower-case letters, digits and '-' (no '.'): "+
			"the job's Services <name>-master and <name>-pserver must be DNS-1035 labels")}
	}
	return nil
}

func instances(path *field.Path, minInstance, maxInstance int32) field.ErrorList {
	errs := atLeast(path.Child("min-instance"), minInstance, 1)
	errs = append(errs, atLeast(path.Child("max-instance"), maxInstance, 1)...)
	if len(errs) == 0 && minInstance > maxInstance {
		errs = append(errs, field.Invalid(path.Child("min-instance"), minInstance, "min-instance must be less than or equal to max-instance"))
	}
	return errs
}

func atLeast(path *field.Path, v, lowest int32) field.ErrorList {
	if v < lowest {
		return field.ErrorList{field.Invalid(path, v, "must be greater than or equal to "+itoa(lowest))}
	}
	return nil
}

func inRange(path *field.Path, v, lowest, highest int32) field.ErrorList {
	if v < lowest || v > highest {
		return field.ErrorList{field.Invalid(path, v, "must be between "+itoa(lowest)+" and "+itoa(highest))}
	}
	return nil
}

// resources checks one role's container resources as the API server checks
// a container's: every name a container resource, quantities non-negative,
// extended resources whole and not overcommitted (a request needs an equal
// limit; so do huge pages), requests of the others at most their limits,
// huge pages in page multiples and only beside cpu or memory.
func resources(path *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	cpuOrMemory, hugePages := false, false
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		lim, p := r.Limits[name], path.Child("limits").Key(string(name))
		if msg := containerResourceName(name); msg != "" {
			errs = append(errs, field.Invalid(p, string(name), msg))
			continue
		}
		if lim.Sign() < 0 {
			errs = append(errs, field.Invalid(p, lim.String(), "limits must be non-negative quantities"))
		}
		errs = append(errs, quantityOf(p, name, lim)...)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || isHugePages(name)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req, p := r.Requests[name], path.Child("requests").Key(string(name))
		if msg := containerResourceName(name); msg != "" {
			errs = append(errs, field.Invalid(p, string(name), msg))
			continue
		}
		if req.Sign() < 0 {
			errs = append(errs, field.Invalid(p, req.String(), "requests must be non-negative quantities"))
		}
		errs = append(errs, quantityOf(p, name, req)...)
		lim, limited := r.Limits[name]
		switch {
		case !limited && !overcommitAllowed(name):
			errs = append(errs, field.Required(path.Child("limits").Key(string(name)), "an extended resource's request needs a limit equal to it"))
		case limited && !overcommitAllowed(name) && req.Cmp(lim) != 0:
			errs = append(errs, field.Invalid(p, req.String(), "an extended resource's request must equal its limit"))
		case limited && req.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(p, req.String(), "a request must not exceed its limit"))
		}
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || isHugePages(name)
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "huge pages require a cpu or memory request or limit"))
	}
	return errs
}

// containerResourceName says what is wrong with a container's resource name,
// or "" when nothing is: it is cpu, memory, ephemeral-storage, a huge page
// size, or a domain-qualified (extended) name.
func containerResourceName(name corev1.ResourceName) string {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return msgs[0]
	}
	if !strings.Contains(string(name), "/") {
		switch {
		case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage, isHugePages(name):
			return ""
		}
		return "must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>) or fully qualified (e.g. nvidia.com/gpu)"
	}
	if !isNative(name) && !isExtended(name) {
		return "doesn't follow extended resource name standard"
	}
	return ""
}

// quantityOf checks a quantity's form for its resource: extended resources
// come in whole units, huge pages in whole pages.
func quantityOf(p *field.Path, name corev1.ResourceName, q resource.Quantity) field.ErrorList {
	if isExtended(name) && q.MilliValue()%1000 != 0 {
		return field.ErrorList{field.Invalid(p, q.String(), string(name)+" must be a whole number")}
	}
	if isHugePages(name) {
		page, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
		if err != nil || page.Sign() <= 0 || page.MilliValue()%1000 != 0 || q.Value()%page.Value() != 0 {
			return field.ErrorList{field.Invalid(p, q.String(), q.String()+" is not a positive integer multiple of "+string(name))}
		}
	}
	return nil
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isNative: in the default (kubernetes.io) namespace, as the API server
// defines it.
func isNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtended: a resource outside the default namespace, such as
// nvidia.com/gpu, which the API server requires whole and not overcommitted.
func isExtended(name corev1.ResourceName) bool {
	if isNative(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func overcommitAllowed(name corev1.ResourceName) bool {
	return isNative(name) && !isHugePages(name)
}

// volumes checks the pod volumes' names and that each has at most one
// source. The sources' own fields are the schema's and the API server's to
// check.
func volumes(p *field.Path, vols []corev1.Volume) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, v := range vols {
		vp := p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), "a volume needs a name"))
		case seen[v.Name]:
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(vp.Child("name"), v.Name, msg))
			}
		}
		seen[v.Name] = true
		// No source at all is fine: the API server makes it an emptyDir.
		if volumeSources(&v.VolumeSource) > 1 {
			errs = append(errs, field.Forbidden(vp, "may not specify more than 1 volume type"))
		}
	}
	return errs
}

// volumeSources counts the sources a volume sets: every field of
// VolumeSource is a pointer to one kind of source.
func volumeSources(s *corev1.VolumeSource) int {
	n := 0
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// volumeMounts checks the containers' mounts: each names a volume of the
// job, at a unique path, with a relative sub-path, and without Bidirectional
// propagation, which only privileged containers may have (the job's never
// are).
func volumeMounts(p *field.Path, mounts []corev1.VolumeMount, vols []corev1.Volume) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, v := range vols {
		names[v.Name] = true
	}
	paths := map[string]bool{}
	for i, m := range mounts {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), "a volume mount needs the name of a volume"))
		} else if !names[m.Name] {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), "a volume mount needs a path"))
		} else if paths[m.MountPath] {
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths[m.MountPath] = true
		errs = append(errs, relativePath(mp.Child("subPath"), m.SubPath)...)
		errs = append(errs, relativePath(mp.Child("subPathExpr"), m.SubPathExpr)...)
		if m.SubPath != "" && m.SubPathExpr != "" {
			errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationNone, corev1.MountPropagationHostToContainer:
			case corev1.MountPropagationBidirectional:
				errs = append(errs, field.Forbidden(mp.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers, which the job's are not"))
			default:
				errs = append(errs, field.NotSupported(mp.Child("mountPropagation"), *m.MountPropagation,
					[]corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}))
			}
		}
		if m.RecursiveReadOnly != nil {
			switch *m.RecursiveReadOnly {
			case corev1.RecursiveReadOnlyDisabled:
			case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
				if !m.ReadOnly {
					errs = append(errs, field.Forbidden(mp.Child("recursiveReadOnly"), "may only be specified when readOnly is true"))
				}
				if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
					errs = append(errs, field.Forbidden(mp.Child("recursiveReadOnly"), "may only be specified when mountPropagation is None or not specified"))
				}
			default:
				errs = append(errs, field.NotSupported(mp.Child("recursiveReadOnly"), *m.RecursiveReadOnly,
					[]corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled}))
			}
		}
	}
	return errs
}

// relativePath checks a sub-path: relative, and never stepping up.
func relativePath(p *field.Path, sub string) field.ErrorList {
	if sub == "" {
		return nil
	}
	if path.IsAbs(sub) {
		return field.ErrorList{field.Invalid(p, sub, "must be a relative path")}
	}
	if slices.Contains(strings.Split(sub, "/"), "..") {
		return field.ErrorList{field.Invalid(p, sub, "must not contain '..'")}
	}
	return nil
}

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

func itoa(v int32) string { return strconv.Itoa(int(v)) }
