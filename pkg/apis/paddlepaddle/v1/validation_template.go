package v1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TemplateOf is a role's pod template, nil when the job gives none.
func (s *TrainingJobSpec) TemplateOf(role Role) *corev1.PodTemplateSpec {
	switch role {
	case RoleMaster:
		return s.Master.Template
	case RolePserver:
		return s.Pserver.Template
	default:
		return s.Trainer.Template
	}
}

// TemplateCommand is the command and args of the trainer template's first
// container, as one list of words: a PyTorch trainer's launch line when
// spec.trainer.entrypoint is empty; nil when the template gives neither.
func (s *TrainerSpec) TemplateCommand() []string {
	if s.Template == nil || len(s.Template.Spec.Containers) == 0 {
		return nil
	}
	c := &s.Template.Spec.Containers[0]
	if len(c.Command)+len(c.Args) == 0 {
		return nil
	}
	return append(append([]string(nil), c.Command...), c.Args...)
}

// ReservedVolumes are the volumes EDL adds to a role's pod.
var ReservedVolumes = sets.New("edl-state", "edl-hosts")

// elasticEnv is what every container of a PyTorch or Horovod job gets
// (framework.ElasticEnv), paddleEnv a PaddlePaddle job's besides its
// PADDLE_* (paddle.Env).
var (
	elasticEnv = sets.New("NAMESPACE", "POD_NAME", "POD_IP", "PYTHONUNBUFFERED")
	paddleEnv  = sets.New("NAMESPACE", "POD_NAME", "POD_IP", "TRAINING_ROLE", "PSERVERS", "TRAINERS", "ENTRY", "TOPOLOGY",
		"TRAINER_PACKAGE", "LD_LIBRARY_PATH", "ETCD_ENDPOINTS")
)

// ReservedEnv reports whether EDL gives a variable of this name to a
// container of a job of framework f: a template's variable of the same
// name contradicts EDL. (A test in pkg/controller checks that every
// variable EDL gives is reserved here.)
func ReservedEnv(f Framework, name string) bool {
	if strings.HasPrefix(name, "EDL_") {
		return true
	}
	switch f {
	case FrameworkPaddlePaddle:
		return strings.HasPrefix(name, "PADDLE_") || paddleEnv.Has(name)
	case FrameworkPyTorch:
		return strings.HasPrefix(name, "PET_") || name == "TORCH_DISABLE_SHARE_RDZV_TCP_STORE" || elasticEnv.Has(name)
	}
	return elasticEnv.Has(name)
}

// templates checks each role's pod template against what EDL gives the
// role's pod (docs/templates.md): the fields EDL sets, or sets job-wide,
// must be left to it.
func templates(path *field.Path, spec *TrainingJobSpec) field.ErrorList {
	var errs field.ErrorList
	f := spec.FrameworkOrDefault()
	jobVolumes, jobPaths := sets.New[string](), sets.New[string]()
	for _, v := range spec.Volumes {
		jobVolumes.Insert(v.Name)
	}
	for _, m := range spec.VolumeMounts {
		jobPaths.Insert(m.MountPath)
	}
	for _, r := range []struct {
		role       Role
		field      string
		resources  corev1.ResourceRequirements
		entrypoint string
	}{
		{RoleMaster, "master", spec.Master.Resources, ""},
		{RolePserver, "pserver", spec.Pserver.Resources, spec.Pserver.Entrypoint},
		{RoleTrainer, "trainer", spec.Trainer.Resources, spec.Trainer.Entrypoint},
	} {
		t := spec.TemplateOf(r.role)
		if t == nil {
			continue
		}
		rp := path.Child(r.field)
		tp := rp.Child("template")
		errs = append(errs, templateMeta(tp.Child("metadata"), t)...)
		errs = append(errs, templatePod(tp.Child("spec"), &t.Spec, r.role == RoleTrainer)...)
		volumes := jobVolumes.Clone()
		for i, v := range t.Spec.Volumes {
			vp := tp.Child("spec", "volumes").Index(i).Child("name")
			switch {
			case ReservedVolumes.Has(v.Name):
				errs = append(errs, field.Invalid(vp, v.Name, "volume "+v.Name+" is EDL's: name it otherwise"))
			case volumes.Has(v.Name):
				errs = append(errs, field.Duplicate(vp, v.Name))
			}
			volumes.Insert(v.Name)
		}
		if len(t.Spec.Containers) == 0 {
			continue
		}
		cp := tp.Child("spec", "containers").Index(0)
		c := &t.Spec.Containers[0]
		for _, e := range c.Env {
			if ReservedEnv(f, e.Name) {
				errs = append(errs, field.Invalid(cp.Child("env").Key(e.Name), e.Name, "environment variable "+e.Name+" is EDL's: it gives the "+r.field+" its own"))
			}
		}
		for i, m := range c.VolumeMounts {
			mp := cp.Child("volumeMounts").Index(i)
			if !volumes.Has(m.Name) {
				errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
			}
			if jobPaths.Has(m.MountPath) {
				errs = append(errs, field.Duplicate(mp.Child("mountPath"), m.MountPath+" is also a mount of spec.volumeMounts"))
			}
		}
		if (len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0) && (len(r.resources.Requests) > 0 || len(r.resources.Limits) > 0) {
			errs = append(errs, field.Invalid(cp.Child("resources"), "", "set the "+r.field+"'s resources once: spec."+r.field+".resources is set too"))
		}
		errs = append(errs, resources(cp.Child("resources"), c.Resources)...)
		if len(c.Command)+len(c.Args) > 0 {
			errs = append(errs, templateCommand(cp, f, r.role, r.field, r.entrypoint, c)...)
		}
	}
	return errs
}

// templateMeta: EDL's labels are EDL's.
func templateMeta(p *field.Path, t *corev1.PodTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	for _, role := range []Role{RoleMaster, RolePserver, RoleTrainer} {
		if _, ok := t.Labels[LabelFor(role)]; ok {
			errs = append(errs, field.Invalid(p.Child("labels").Key(LabelFor(role)), t.Labels[LabelFor(role)],
				"label "+LabelFor(role)+" is EDL's: it selects the job's pods by it"))
		}
	}
	return errs
}

// templatePod: a ReplicaSet's pods restart always, and where a job's pods
// run is the job's (the autoscaler places its trainers by it).
func templatePod(p *field.Path, s *corev1.PodSpec, trainer bool) field.ErrorList {
	var errs field.ErrorList
	if s.RestartPolicy != "" && s.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), s.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	jobWide := func(name string, set bool) {
		if set {
			errs = append(errs, field.Forbidden(p.Child(name), name+" is the job's, which every role and the autoscaler's placement share: set spec."+name))
		}
	}
	jobWide("nodeSelector", len(s.NodeSelector) > 0)
	jobWide("affinity", s.Affinity != nil)
	jobWide("tolerations", len(s.Tolerations) > 0)
	jobWide("schedulerName", s.SchedulerName != "")
	jobWide("priorityClassName", s.PriorityClassName != "")
	jobWide("hostNetwork", s.HostNetwork)
	if trainer && s.TerminationGracePeriodSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("terminationGracePeriodSeconds"),
			"a trainer's grace period is EDL's: a resize waits for it, and judges the exits within it"))
	}
	return errs
}

// templateCommand checks a template container's command and args, which
// only a trainer may give: a PyTorch trainer's are its launch line, a
// Horovod trainer's its own command (horovodrun runs in the master).
func templateCommand(cp *field.Path, f Framework, role Role, name, entrypoint string, c *corev1.Container) field.ErrorList {
	command := cp.Child("command")
	argv := append(append([]string(nil), c.Command...), c.Args...)
	switch {
	case role == RoleMaster:
		return field.ErrorList{field.Forbidden(command, "the master's command is EDL's: leave command and args out")}
	case role != RoleTrainer || f == FrameworkPaddlePaddle:
		return field.ErrorList{field.Forbidden(command, "the "+name+"'s command is EDL's launcher's: leave command and args out and set spec."+name+".entrypoint")}
	case entrypoint != "":
		return field.ErrorList{field.Invalid(command, "", "give the trainer's launch line once: spec.trainer.entrypoint is set too")}
	case f == FrameworkPyTorch && len(c.Command) == 0:
		return field.ErrorList{field.Required(command,
			"a PyTorch trainer's launch line starts with its program: EDL runs it under torchrun in place of the image's entrypoint, which it cannot read")}
	case f == FrameworkPyTorch:
		if args, ok := TorchrunArgv(argv); ok {
			return torchrunOptions(command, strings.Join(argv, " "), args)
		}
	}
	return nil
}
