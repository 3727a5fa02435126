package v1

import (
	"slices"
	"strconv"
	"strings"

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

// MaxVolumes is the most volumes, and the most volume mounts, a job may
// list: the CRD's maxItems, which keep within the API server's CEL cost
// budget the rule that every mount names one of the job's volumes.
const MaxVolumes = 128

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

	errs = append(errs, framework(path, spec)...)
	errs = append(errs, templates(path, spec)...)
	if rp := spec.RunPolicy; rp != nil {
		p := path.Child("runPolicy")
		if c := rp.CleanPodPolicy; c != "" && !slices.Contains(CleanPodPolicies, c) {
			errs = append(errs, field.NotSupported(p.Child("cleanPodPolicy"), c, CleanPodPolicies))
		}
		if rp.TTLSecondsAfterFinished != nil {
			errs = append(errs, atLeast(p.Child("ttlSecondsAfterFinished"), *rp.TTLSecondsAfterFinished, 0)...)
		}
	}

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

func itoa(v int32) string { return strconv.Itoa(int(v)) }
