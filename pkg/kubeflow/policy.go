package kubeflow

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// size sets the trainers' range: a job that is not elastic runs all its
// replicas; an elastic one between its minReplicas and maxReplicas, a bound
// not given falling back to the replicas, kept within the other bound.
func (c *converter) size(ep *object, total int32) error {
	lo, hi := total, total
	if ep != nil {
		minN, hasMin, err := integer(ep, "minReplicas")
		if err != nil {
			return err
		}
		maxN, hasMax, err := integer(ep, "maxReplicas")
		if err != nil {
			return err
		}
		if hasMin {
			lo, hi = minN, max(minN, total)
		}
		if hasMax {
			hi = maxN
			if !hasMin {
				lo = min(total, maxN)
			}
		}
		if hasMin && minN < 1 {
			c.drop(ep.path.Child("minReplicas"), "EDL runs at least 1 trainer: min-instance is 1")
			lo = 1
		}
		if hasMax && maxN < lo {
			return fmt.Errorf("%s: %d is below the minimum, %d", ep.path.Child("maxReplicas"), maxN, lo)
		}
	}
	if hi < 1 {
		return errors.New("spec.pytorchReplicaSpecs: 0 replicas: nothing to run")
	}
	c.job.Spec.Trainer.MinInstance, c.job.Spec.Trainer.MaxInstance = max(lo, 1), hi
	return nil
}

// elastic carries the elastic policy's failure budget and rendezvous
// settings; EDL's rendezvous is its own, in its master pod.
func (c *converter) elastic(ep *object, policy *v1.ElasticPolicy) error {
	if ep == nil {
		return nil
	}
	backend, ok, err := str(ep, "rdzvBackend")
	switch {
	case err != nil:
		return err
	case ok && backend != v1.DefaultRdzvBackend:
		c.drop(ep.path.Child("rdzvBackend"), "EDL's rendezvous is c10d, its store in EDL's master pod")
	}
	c.dropField(ep, "rdzvHost", "EDL's rendezvous is its master Service")
	c.dropField(ep, "rdzvPort", "EDL's rendezvous is its master Service, on spec.elasticPolicy.rdzvPort (default 29400)")
	c.dropField(ep, "rdzvId", "EDL's rendezvous id is the job's UID")
	c.dropField(ep, "standalone", "EDL's rendezvous store is its master pod's, never a trainer's")
	c.dropField(ep, "metrics", "EDL's autoscaler decides the trainers' count between min-instance and max-instance")
	n, ok, err := integer(ep, "maxRestarts")
	switch {
	case err != nil:
		return err
	case ok && n < 0:
		c.drop(ep.path.Child("maxRestarts"), "EDL's failure budget is 0 or more")
	case ok:
		policy.MaxRestarts = &n
	}
	return c.rdzvConf(ep, policy)
}

// rdzvConf carries the rendezvous settings EDL takes: those [v1.Validate]
// and the CRD do not refuse.
func (c *converter) rdzvConf(ep *object, policy *v1.ElasticPolicy) error {
	v, ok := ep.take("rdzvConf")
	if !ok {
		return nil
	}
	items, isList := v.([]any)
	if !isList {
		return typeError(ep.path.Child("rdzvConf"), "a list of {key, value}", v)
	}
	seen := map[string]bool{}
	for i, item := range items {
		ip := ep.path.Child("rdzvConf").Index(i)
		m, isMap := item.(map[string]any)
		if !isMap {
			return typeError(ip, "{key, value}", item)
		}
		o := c.open(ip, m)
		key, _, err := str(o, "key")
		if err != nil {
			return err
		}
		value, _, err := str(o, "value")
		if err != nil {
			return err
		}
		why := v1.RdzvSettingRefused(key, value)
		switch {
		case why != "":
		case len(key) > 63 || len(value) > 253:
			why = "EDL takes keys of at most 63 characters and values of at most 253"
		case seen[key]:
			why = "key " + key + " is given before"
		case len(policy.RdzvConf) == 32:
			why = "EDL takes at most 32 rendezvous settings"
		}
		if why != "" {
			c.drop(ip, why)
			continue
		}
		seen[key] = true
		policy.RdzvConf = append(policy.RdzvConf, v1.RdzvConf{Key: key, Value: value})
	}
	return nil
}

// procsGiven is a number of processes per trainer where the input gives it.
type procsGiven struct {
	path *field.Path
	v    any
}

// nprocs carries the worker processes per trainer: spec.nprocPerNode, a
// string in Kubeflow's newer versions, or the deprecated
// elasticPolicy.nProcPerNode (Kubeflow refuses the two together), else the
// --nproc-per-node of the trainers' own torchrun line: the first of these
// that is a number EDL takes.
func (c *converter) nprocs(spec, ep *object, policy *v1.ElasticPolicy) error {
	var all []procsGiven
	if v, ok := spec.take("nprocPerNode"); ok {
		all = append(all, procsGiven{spec.path.Child("nprocPerNode"), v})
	}
	if ep != nil {
		if v, ok := ep.take("nProcPerNode"); ok {
			all = append(all, procsGiven{ep.path.Child("nProcPerNode"), v})
		}
	}
	if c.lineProcs != nil {
		all = append(all, *c.lineProcs)
	}
	var carried *field.Path // the first number EDL can take is carried
	for _, g := range all {
		if carried != nil {
			c.drop(g.path, carried.String()+" gives it")
			continue
		}
		n, isWhole := whole(g.v)
		if s, isString := g.v.(string); isString {
			var err error
			if n, err = strconv.ParseInt(s, 10, 32); err != nil {
				c.drop(g.path, "EDL starts spec.elasticPolicy.nProcPerNode processes in each trainer, a number (default 1): set it to the GPUs a trainer has")
				continue
			}
		} else if !isWhole {
			return typeError(g.path, `a number, "auto", "cpu" or "gpu"`, g.v)
		}
		if n < 1 || n > 1024 {
			c.drop(g.path, "EDL takes 1 to 1024 processes a trainer")
			continue
		}
		p := int32(n) // #nosec G115 -- 1 to 1024 above
		policy.NProcPerNode, carried = &p, g.path
		if c.lineProcs != nil && g.path == c.lineProcs.path {
			c.note(g.path, "carried: spec.elasticPolicy.nProcPerNode, which EDL gives torchrun")
		}
	}
	return nil
}

// runPolicy carries the pods a finished job keeps, its TTL, the priority,
// suspension and failure budget; the rest is Kubeflow's own job life, which
// EDL runs its own way.
func (c *converter) runPolicy(spec *object, policy *v1.ElasticPolicy) error {
	rp, err := c.child(spec, "runPolicy")
	if err != nil || rp == nil {
		return err
	}
	if err := c.finished(rp); err != nil {
		return err
	}
	c.dropField(rp, "activeDeadlineSeconds", "EDL sets no deadline on a running job")
	c.dropField(rp, "managedBy", "a TrainingJob is run by EDL's controller")
	n, ok, err := integer(rp, "backoffLimit")
	switch {
	case err != nil:
		return err
	case ok && policy.MaxRestarts != nil:
		c.drop(rp.path.Child("backoffLimit"), "elasticPolicy.maxRestarts gives spec.elasticPolicy.maxRestarts")
	case ok && n < 0:
		c.drop(rp.path.Child("backoffLimit"), "EDL's failure budget is 0 or more")
	case ok:
		policy.MaxRestarts = &n
	}
	if c.job.Spec.Suspend, _, err = boolean(rp, "suspend"); err != nil {
		return err
	}
	sp, err := c.child(rp, "schedulingPolicy")
	if err != nil || sp == nil {
		return err
	}
	pc, ok, err := str(sp, "priorityClass")
	switch {
	case err != nil:
		return err
	case ok && c.job.Spec.PriorityClassName != "" && c.job.Spec.PriorityClassName != pc:
		c.drop(sp.path.Child("priorityClass"), "the pod template's priorityClassName gives spec.priorityClassName")
	case ok:
		c.job.Spec.PriorityClassName = pc
	}
	gang := "EDL admits a job once its min-instance trainers fit, and starts them together"
	c.dropField(sp, "minAvailable", gang)
	c.dropField(sp, "minResources", gang)
	c.dropField(sp, "queue", "EDL's admission queue is its own (TrainingQueues), not a gang scheduler's")
	c.dropField(sp, "scheduleTimeoutSeconds", "EDL requeues a job whose minimum did not start within the autoscaler's start deadline")
	return nil
}

// finished carries cleanPodPolicy and ttlSecondsAfterFinished into
// spec.runPolicy, which has Kubeflow's names and values.
func (c *converter) finished(rp *object) error {
	var run v1.RunPolicy
	clean, ok, err := str(rp, "cleanPodPolicy")
	switch p := v1.CleanPodPolicy(clean); {
	case err != nil:
		return err
	case ok && !slices.Contains(v1.CleanPodPolicies, p):
		c.drop(rp.path.Child("cleanPodPolicy"), "EDL's cleanPodPolicy is None, Running or All")
	case ok:
		run.CleanPodPolicy = p
	}
	ttl, ok, err := integer(rp, "ttlSecondsAfterFinished")
	switch {
	case err != nil:
		return err
	case ok && ttl < 0:
		c.drop(rp.path.Child("ttlSecondsAfterFinished"), "a TTL is 0 or more seconds")
	case ok:
		run.TTLSecondsAfterFinished = &ttl
	}
	if run != (v1.RunPolicy{}) {
		c.job.Spec.RunPolicy = &run
	}
	return nil
}
