package v1

import (
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	if len(vols) > MaxVolumes {
		errs = append(errs, field.TooMany(p, len(vols), MaxVolumes))
	}
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
	if len(mounts) > MaxVolumes {
		errs = append(errs, field.TooMany(p, len(mounts), MaxVolumes))
	}
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
