package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/framework"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestTheMasterIsProtected: the master of a PyTorch or Horovod job — the
// one pod whose loss restarts every trainer — gets a PodDisruptionBudget of
// minAvailable 1, small Guaranteed resources when the job sets none (its
// own are kept), the job's priority, and a preference for nodes without
// GPUs; a PaddlePaddle job gets no budget.
func TestTheMasterIsProtected(t *testing.T) {
	for name, job := range map[string]*v1.TrainingJob{
		"PyTorch": torchJob(func(j *v1.TrainingJob) { j.Spec.PriorityClassName = "high" }),
		"Horovod": builders.Job("mnist", testNamespace, builders.Horovod("python3 train.py"), builders.Trainers(1, 3), func(j *v1.TrainingJob) { j.Spec.PriorityClassName = "high" }),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(job)
			require.NoError(t, f.sync("mnist"))
			pdb, err := f.kube.PolicyV1().PodDisruptionBudgets(testNamespace).Get(f.ctx, "mnist-master", metav1.GetOptions{})
			require.NoError(t, err)
			one := intstr.FromInt32(1)
			assert.Equal(t, &one, pdb.Spec.MinAvailable)
			assert.Equal(t, map[string]string{v1.LabelMaster: "mnist"}, pdb.Spec.Selector.MatchLabels)
			assert.Equal(t, policyv1.AlwaysAllow, *pdb.Spec.UnhealthyPodEvictionPolicy, "a master that is not Ready protects nothing")
			assert.True(t, controlledBy(pdb, job))

			pod := PodTemplate(job, v1.RoleMaster, nil).Spec
			res := pod.Containers[0].Resources
			assert.Equal(t, res.Requests, res.Limits, "Guaranteed")
			assert.True(t, res.Requests.Cpu().Equal(framework.DefaultMasterCPU))
			assert.True(t, res.Requests.Memory().Equal(framework.DefaultMasterMemory))
			assert.Equal(t, "high", pod.PriorityClassName, "the trainers' priority")
			require.NotNil(t, pod.Affinity)
			assert.Equal(t, []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: framework.GPUNodeLabel, Operator: corev1.NodeSelectorOpDoesNotExist}}}}},
				pod.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)

			own := job.DeepCopy()
			own.Spec.Master.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
			assert.Equal(t, own.Spec.Master.Resources, PodTemplate(own, v1.RoleMaster, nil).Spec.Containers[0].Resources, "the job's own are kept")
		})
	}
	t.Run("PaddlePaddle", func(t *testing.T) {
		f := newFixture(t)
		f.addJob(builders.Job("mnist", testNamespace, builders.FaultTolerant()))
		require.NoError(t, f.sync("mnist"))
		assert.Empty(t, f.writesOf("poddisruptionbudgets"))
	})
}

// TestABudgetInTheWayIsLeftAlone: a PodDisruptionBudget of the master's
// name the job does not control is neither adopted nor changed; the sync
// reports it.
func TestABudgetInTheWayIsLeftAlone(t *testing.T) {
	f := newFixture(t)
	job := f.addJob(torchJob())
	other := MasterDisruptionBudget(job)
	other.OwnerReferences = nil
	require.NoError(t, f.kubeInf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(other))
	err := f.sync("mnist")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PodDisruptionBudget mnist-master is in the way")
	assert.Empty(t, f.writesOf("poddisruptionbudgets"))
}
