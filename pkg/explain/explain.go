// Package explain says why every TrainingJob has the trainers it has: it
// plans once on the live cluster, as the controller's next cycle would,
// with the options the running controller published on its Lease, writes
// nothing, and prints the report. `edl explain` and `kubectl edl explain`
// are both this package.
package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	log "github.com/inconshreveable/log15"
	"k8s.io/client-go/kubernetes"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/config"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/pkg/watch"
)

// SyncTimeout bounds the wait for the informers: a user who may not list
// pods or nodes gets one line instead of a command that never ends.
const SyncTimeout = time.Minute

// Result is one explanation: the plan's report, the configuration it
// planned with, and where that configuration came from.
type Result struct {
	autoscaler.Report
	Configuration *config.EDLConfiguration `json:"configuration"`
	// Source says where Configuration came from: the Lease and its
	// leader, or the defaults.
	Source string `json:"source"`
}

// Configuration is the configuration to plan with: the one the running
// controller published on its Lease in namespace, with the fields given
// sets over it. When none is published it is the defaults with given, and
// warning says why in one line; err is for what stops the explanation
// (the API server failing).
func Configuration(ctx context.Context, leases coordinationv1.LeasesGetter, namespace string, given *config.EDLConfiguration) (
	cfg *config.EDLConfiguration, source, warning string, err error) {
	p, err := config.Published(ctx, leases, namespace)
	switch {
	case errors.Is(err, config.ErrNotPublished):
		source = "the defaults"
		if len(config.KeyValues(given)) > 0 {
			source += ", with the options given over them"
		}
		return config.Merge(config.Default(), given), source, err.Error() + "; planning with the default options", nil
	case err != nil:
		return nil, "", "", err
	}
	source = fmt.Sprintf("the Lease %s, published by %s (edl %s)", p.Lease, p.Leader, p.Version)
	if !p.Current() {
		warning = fmt.Sprintf("the Lease %s is held by %q, which has not published its configuration yet; planning with that of %q", p.Lease, p.Holder, p.Leader)
	}
	if len(config.KeyValues(given)) > 0 {
		source += ", with the options given over it"
	}
	return config.Merge(p.Configuration, given), source, warning, nil
}

// Live plans once on the live cluster with cfg's planner options and
// returns the report of every TrainingJob. It writes nothing.
func Live(ctx context.Context, kubeClient kubernetes.Interface, tjClient tjclient.Interface, cfg *config.EDLConfiguration, logger log.Logger) (autoscaler.Report, error) {
	planner := cfg.Planner()
	w, err := watch.New(kubeClient, tjClient, 0, planner.GPUResources, logger)
	if err != nil {
		return autoscaler.Report{}, err
	}
	// The same autoscaler as the controller's, which Explain never lets
	// write: no recorder, no metrics.
	scaler := w.Autoscaler(planner, kubeClient, tjClient, nil, logger, nil)
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer func() {
		stopInformers()
		w.Shutdown()
	}()
	w.Start(informersCtx)
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !scaler.WaitForSync(syncCtx) {
		if ctx.Err() != nil {
			return autoscaler.Report{}, errors.New("interrupted")
		}
		return autoscaler.Report{}, fmt.Errorf("the informers did not sync within %v: may the user list and watch pods, nodes, ResourceQuotas, ReplicaSets, PriorityClasses and TrainingJobs?", SyncTimeout)
	}
	return scaler.Explain(), nil
}

// JobNotFoundError is Filter's error for a job the report does not have.
type JobNotFoundError struct{ Namespace, Name string }

func (e *JobNotFoundError) Error() string {
	return fmt.Sprintf("TrainingJob %s/%s not found", e.Namespace, e.Name)
}

// Filter keeps the jobs of namespace ns ("" for all), or only job name in
// it, and of the queue their admissions, their waits, and the preemptions
// of them or for them; an unknown job is a *JobNotFoundError.
func Filter(r autoscaler.Report, ns, name string) (autoscaler.Report, error) {
	if ns == "" && name == "" {
		return r, nil
	}
	var kept []autoscaler.JobReport
	for _, j := range r.Jobs {
		if (ns == "" || j.Namespace == ns) && (name == "" || j.Name == name) {
			kept = append(kept, j)
		}
	}
	if name != "" && len(kept) == 0 {
		return r, &JobNotFoundError{Namespace: ns, Name: name}
	}
	r.Jobs = kept
	mine := func(key string) bool {
		jns, jname, _ := strings.Cut(key, "/")
		return (ns == "" || jns == ns) && (name == "" || jname == name)
	}
	r.Queue = slices.DeleteFunc(slices.Clone(r.Queue), func(w planner.Waiting) bool { return !mine(w.Job) })
	r.Admitted = slices.DeleteFunc(slices.Clone(r.Admitted), func(a planner.Admission) bool { return !mine(a.Job) })
	r.Preempted = slices.DeleteFunc(slices.Clone(r.Preempted), func(p planner.Preemption) bool { return !mine(p.Job) && !mine(p.By) })
	return r, nil
}
