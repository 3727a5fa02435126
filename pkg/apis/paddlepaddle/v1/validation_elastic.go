package v1

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// framework checks what depends on spec.framework, as the CRD's rules do:
// a PaddlePaddle job needs pservers and takes no elasticPolicy; a PyTorch
// or Horovod job has no pservers.
func framework(path *field.Path, spec *TrainingJobSpec) field.ErrorList {
	var errs field.ErrorList
	pp := path.Child("pserver")
	f := spec.FrameworkOrDefault()
	switch f {
	case FrameworkPaddlePaddle:
		// A missing pserver is one of 0 instances, which names the field.
		errs = append(errs, instances(pp, spec.Pserver.MinInstance, spec.Pserver.MaxInstance)...)
		errs = append(errs, resources(pp.Child("resources"), spec.Pserver.Resources)...)
		if spec.ElasticPolicy != nil {
			errs = append(errs, field.Forbidden(path.Child("elasticPolicy"),
				"elasticPolicy is for PyTorch and Horovod jobs: a PaddlePaddle job scales through its master's task queue (fault_tolerant)"))
		}
		return errs
	case FrameworkPyTorch, FrameworkHorovod:
	default:
		return append(errs, field.NotSupported(path.Child("framework"), f, []Framework{FrameworkPaddlePaddle, FrameworkPyTorch, FrameworkHorovod}))
	}
	if !reflect.ValueOf(spec.Pserver).IsZero() {
		errs = append(errs, field.Forbidden(pp, "pserver must not be set for a "+string(f)+" job: its trainers exchange gradients by all-reduce, without parameter servers"))
	}
	if f == FrameworkPyTorch {
		errs = append(errs, torchrunLine(path.Child("trainer", "entrypoint"), spec.Trainer.Entrypoint)...)
		if spec.Trainer.Entrypoint == "" && spec.Trainer.TemplateCommand() == nil {
			errs = append(errs, field.Required(path.Child("trainer", "entrypoint"),
				"a PyTorch trainer needs its launch line: spec.trainer.entrypoint, or its template's command"))
		}
	}
	p := spec.Elastic()
	ep := path.Child("elasticPolicy")
	if p.HostDiscovery != nil && f != FrameworkHorovod {
		errs = append(errs, field.Forbidden(ep.Child("hostDiscovery"),
			"elasticPolicy.hostDiscovery is for Horovod jobs: a PyTorch job's trainers find each other through torchrun's rendezvous"))
	}
	if p.RdzvConf != nil && f != FrameworkPyTorch {
		errs = append(errs, field.Forbidden(ep.Child("rdzvConf"),
			"elasticPolicy.rdzvConf is for PyTorch jobs: horovodrun has no torchrun rendezvous to configure"))
	}
	if p.RdzvBackend != "" && p.RdzvBackend != DefaultRdzvBackend {
		errs = append(errs, field.NotSupported(ep.Child("rdzvBackend"), p.RdzvBackend, []string{DefaultRdzvBackend}))
	}
	errs = append(errs, inRange(ep.Child("rdzvPort"), p.RdzvPortOrDefault(), 1, 65535)...)
	errs = append(errs, inRange(ep.Child("nProcPerNode"), p.NProcPerNodeOrDefault(), 1, 1024)...)
	errs = append(errs, atLeast(ep.Child("maxRestarts"), p.MaxRestartsOrDefault(), 0)...)
	errs = append(errs, inRange(ep.Child("resizeCooldownSeconds"), p.ResizeCooldown(), 0, 86400)...)
	if len(p.RdzvConf) > 32 {
		errs = append(errs, field.TooMany(ep.Child("rdzvConf"), len(p.RdzvConf), 32))
	}
	keys := map[string]bool{}
	for i, c := range p.RdzvConf {
		cp := ep.Child("rdzvConf").Index(i)
		switch why := RdzvSettingRefused(c.Key, c.Value); {
		case c.Key == "":
			errs = append(errs, field.Required(cp.Child("key"), why))
		case why != "":
			errs = append(errs, field.Invalid(cp, c.Key+"="+c.Value, why))
		case keys[c.Key]:
			errs = append(errs, field.Duplicate(cp.Child("key"), c.Key))
		}
		keys[c.Key] = true
	}
	if h := p.HostDiscovery; h != nil && h.SlotsPerHost != nil {
		errs = append(errs, inRange(ep.Child("hostDiscovery", "slotsPerHost"), *h.SlotsPerHost, 1, 1024)...)
	}
	return errs
}

// RdzvSettingRefused is why EDL refuses a rendezvous setting
// (elasticPolicy.rdzvConf) of its own, "" when it takes it.
func RdzvSettingRefused(key, value string) string {
	switch {
	case key == "":
		return "a rendezvous setting needs a key"
	case key == "is_host":
		return "rdzvConf: key is_host is EDL's: the rendezvous store is the master pod's, never a trainer's"
	case strings.ContainsAny(key, ",=") || strings.Contains(value, ","):
		return "rdzvConf: " + key + "=" + value + " must not contain a comma, nor its key an equals sign: PET_RDZV_CONF is key=value,key=value"
	}
	return ""
}
