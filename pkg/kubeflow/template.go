package kubeflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// container is the name of the training container in Kubeflow's replica
// templates, which Kubeflow requires.
const container = "pytorch"

// template makes a replica's pod template, at path in the input, the
// trainers': its training container first, its image the job's, its
// placement the job's, without what EDL keeps for itself, which
// [v1.Validate] refuses in a template (docs/templates.md lists it).
// Everything else is carried as written.
func (c *converter) template(path *field.Path, raw any) error {
	data, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t := &corev1.PodTemplateSpec{}
	strict, err := sigsjson.UnmarshalStrict(data, t)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range strict {
		if fe, ok := errors.AsType[sigsjson.FieldError](e); ok {
			c.drop(path.Child(fe.FieldPath()), "not a field of a pod template")
		} else {
			c.drop(path, e.Error())
		}
	}
	s := &t.Spec
	cp := path.Child("spec", "containers")
	if len(s.Containers) == 0 {
		return fmt.Errorf("%s: required: the trainers' container", cp)
	}
	i := max(slices.IndexFunc(s.Containers, func(ctr corev1.Container) bool { return ctr.Name == container }), 0)
	if i > 0 {
		ctr := s.Containers[i]
		s.Containers = slices.Insert(slices.Delete(s.Containers, i, i+1), 0, ctr)
		c.note(cp.Index(i), "moved to spec.trainer.template.spec.containers[0], which is EDL's trainer")
	}
	cp = cp.Index(i)
	ctr := &s.Containers[0]
	if ctr.Image == "" {
		return fmt.Errorf("%s: required: the trainers' image", cp.Child("image"))
	}
	spec := &c.job.Spec
	spec.Image, ctr.Image = ctr.Image, ""

	// Where the pods run is the job's: the autoscaler places trainers by it.
	spec.NodeSelector, s.NodeSelector = s.NodeSelector, nil
	spec.Affinity, s.Affinity = s.Affinity, nil
	spec.Tolerations, s.Tolerations = s.Tolerations, nil
	spec.SchedulerName, s.SchedulerName = s.SchedulerName, ""
	spec.PriorityClassName, s.PriorityClassName = s.PriorityClassName, ""
	spec.HostNetwork, s.HostNetwork = s.HostNetwork, false

	if s.RestartPolicy != "" {
		c.drop(path.Child("spec", "restartPolicy"), restartWhy)
		s.RestartPolicy = ""
	}
	if s.TerminationGracePeriodSeconds != nil {
		c.drop(path.Child("spec", "terminationGracePeriodSeconds"), "a trainer's grace period is EDL's: a resize waits for it")
		s.TerminationGracePeriodSeconds = nil
	}
	for _, role := range []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer} {
		if label := v1.LabelFor(role); hasKey(t.Labels, label) {
			c.drop(path.Child("metadata", "labels").Key(label), "label "+label+" is EDL's: it selects the job's pods by it")
			delete(t.Labels, label)
		}
	}
	var env []corev1.EnvVar
	for j, e := range ctr.Env {
		if v1.ReservedEnv(v1.FrameworkPyTorch, e.Name) {
			c.drop(cp.Child("env").Index(j), e.Name+" is EDL's: it gives every trainer its own")
			continue
		}
		env = append(env, e)
	}
	ctr.Env = env
	c.launchLine(cp, ctr)
	spec.Trainer.Template = t
	return nil
}

// What a trainer without a command needs before it is applied: with args,
// and with neither command nor args.
const (
	argsOnly = "must be set before applying: EDL runs the trainer's command and args under torchrun in place of " +
		"the image's ENTRYPOINT, which it cannot read; until then EDL refuses the job at spec.trainer.template.spec.containers[0].command"
	entrypointOnly = "must be set before applying: the image's ENTRYPOINT ran the training, and EDL runs the trainer's " +
		"command and args under torchrun in its place, without reading the image"
)

// launchLine keeps a trainer's command and args, its launch line, without
// the torchrun options EDL gives every trainer ([v1.Validate] refuses
// them). A container without a command ran its image's
// ENTRYPOINT, which the line must now name.
func (c *converter) launchLine(cp *field.Path, ctr *corev1.Container) {
	if len(ctr.Command) == 0 {
		if len(ctr.Args) > 0 {
			c.note(cp.Child("command"), argsOnly)
		} else {
			c.note(cp.Child("command"), entrypointOnly)
		}
		return
	}
	argv := append(slices.Clone(ctr.Command), ctr.Args...)
	words, ok := v1.TorchrunArgv(argv)
	if !ok {
		return
	}
	// where is word i's path in the input: command[i] or args[i-len(command)].
	where := func(i int) *field.Path {
		if i < len(ctr.Command) {
			return cp.Child("command").Index(i)
		}
		return cp.Child("args").Index(i - len(ctr.Command))
	}
	drop := map[int]bool{}
	first := len(argv) - len(words) // torchrun's first argument in argv
	for _, o := range v1.OwnedOptions(words) {
		for w := range o.Words {
			drop[first+o.Index+w] = true
		}
		if o.Name == "nproc-per-node" {
			// Its value, after = or the next word, is nprocs' to carry.
			_, value, _ := strings.Cut(words[o.Index], "=")
			if o.Words == 2 && o.Index+1 < len(words) {
				value = words[o.Index+1]
			}
			c.lineProcs = &procsGiven{where(first + o.Index), value}
			continue
		}
		c.drop(where(first+o.Index), "torchrun's --"+o.Name+" is EDL's: it comes from "+o.From)
	}
	if len(drop) == 0 {
		return
	}
	var command, args []string
	for i, w := range argv {
		switch {
		case drop[i]:
		case i < len(ctr.Command):
			command = append(command, w)
		default:
			args = append(args, w)
		}
	}
	ctr.Command, ctr.Args = command, args
}

// hasKey reports whether m has key, whatever its value.
func hasKey(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}
