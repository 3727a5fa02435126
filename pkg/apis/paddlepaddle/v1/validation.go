package v1

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted job with the same rules the CRD's schema
// enforces on the API server. The controller calls it on every sync so that
// an object which reached the store without those rules (created before the
// CRD had them, or against an older CRD) fails with a message naming the
// field instead of half-creating a job.
func Validate(job *TrainingJob) field.ErrorList {
	var errs field.ErrorList
	spec := &job.Spec
	path := field.NewPath("spec")

	if spec.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), "the job image is required"))
	} else if strings.ContainsAny(spec.Image, " \t\r\n") {
		errs = append(errs, field.Invalid(path.Child("image"), spec.Image, "image must be a container image reference without spaces"))
	}
	errs = append(errs, inRange(path.Child("port"), spec.FirstPort(), 1, 65535)...)
	errs = append(errs, inRange(path.Child("ports_num"), spec.DensePorts(), 1, 1024)...)
	errs = append(errs, inRange(path.Child("ports_num_for_sparse"), spec.SparsePorts(), 0, 1024)...)
	if len(errs) == 0 && int64(spec.FirstPort())+int64(spec.DensePorts())+int64(spec.SparsePorts())-1 > 65535 {
		errs = append(errs, field.Invalid(path.Child("port"), spec.FirstPort(), "port + ports_num + ports_num_for_sparse - 1 must not exceed 65535"))
	}
	errs = append(errs, atLeast(path.Child("passes"), spec.Passes, 0)...)

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

func resources(path *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[name]
		if req.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(), "requests must be non-negative quantities"))
		} else if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(), "a request must not exceed its limit"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		if lim := r.Limits[name]; lim.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("limits").Key(string(name)), lim.String(), "limits must be non-negative quantities"))
		}
	}
	return errs
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }
