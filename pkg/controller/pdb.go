package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// MasterDisruptionBudget is the PodDisruptionBudget <job>-master of a job
// whose training restarts when its master goes (PyTorch: the rendezvous
// store; Horovod: the launcher): minAvailable 1 of the master pod, so that
// a node drain or an eviction waits for the job rather than taking the one
// pod it cannot lose cheaply. A master that is not Ready may still be
// evicted (unhealthyPodEvictionPolicy AlwaysAllow): it protects nothing.
func MasterDisruptionBudget(job *v1.TrainingJob) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	always := policyv1.AlwaysAllow
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1.ReplicaSetName(job.Name, v1.RoleMaster),
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelMaster: job.Name},
			OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               &one,
			Selector:                   &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelMaster: job.Name}},
			UnhealthyPodEvictionPolicy: &always,
		},
	}
}

// ensureMasterBudget creates the job's [MasterDisruptionBudget] when its
// framework restarts the training with the master and the budget is
// missing; it leaves one of that name the job does not control alone, and
// reports it.
func (c *Controller) ensureMasterBudget(ctx context.Context, job *v1.TrainingJob) error {
	if frameworks.Training(&job.Spec) == nil {
		return nil
	}
	want := MasterDisruptionBudget(job)
	existing, err := c.pdbs.PodDisruptionBudgets(job.Namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err := c.kubeClient.PolicyV1().PodDisruptionBudgets(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; its event brings the job back
		}
		if err != nil {
			return fmt.Errorf("create PodDisruptionBudget %s: %w", want.Name, err)
		}
		c.log.Info("created the master's PodDisruptionBudget", "job", job.Namespace+"/"+job.Name, "pdb", want.Name)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created PodDisruptionBudget %s", want.Name)
		return nil
	case err != nil:
		return err
	case !controlledBy(existing, job):
		return fmt.Errorf("PodDisruptionBudget %s is in the way: the job %s/%s does not control it", want.Name, job.Namespace, job.Name)
	}
	return nil
}
