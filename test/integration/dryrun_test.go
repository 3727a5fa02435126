package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1/testcorpus"
	"github.com/paddlepaddle/edl/pkg/controller"
)

// dryRun creates nothing: the API server validates, defaults and admits the
// object as for a real create, and answers as it would.
var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// TestDerivedObjectsOfValidJobsPassDryRun is how validation finds its holes:
// every valid job of the corpus, and every example job, is stored through
// the CRD; the controller's own builders derive its ReplicaSets and Services
// from the stored (server-defaulted) job, and a pod from each ReplicaSet's
// template as the ReplicaSet controller would make it; the API server must
// accept each of them in a server-side dry run. A refusal here is a rule the
// job's validation lacks, or a valid-corpus entry that is not valid. The
// invalid corpus is derived the same way, past validation, to show which of
// its rules protect the derived objects.
func TestDerivedObjectsOfValidJobsPassDryRun(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)

	corpus, err := testcorpus.ValidJobs()
	require.NoError(t, err)
	require.NotEmpty(t, corpus)
	var names []string
	for _, c := range corpus {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(c.YAML, &obj.Object))
		_, err := client.Resource(trainingJobs).Namespace(ns).Create(testContext(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err, "the API server refused the valid job %s", c.Name)
		names = append(names, obj.GetName())
	}
	for _, job := range exampleJobs(t) {
		job = job.DeepCopy()
		job.Namespace = ns
		_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), job, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err, "the API server refused the example job %s", job.Name)
		names = append(names, job.Name)
	}

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			job, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Get(testContext(t), name, metav1.GetOptions{})
			require.NoError(t, err)
			v1.SetObjectDefaults_TrainingJob(job)
			require.Empty(t, v1.Validate(job), "the controller would fail the job Invalid")
			assert.Empty(t, dryRunDerived(t, job), "the API server refused objects of a valid job")
		})
	}

	// The other side: the invalid jobs marked 'derived: refused' are those
	// whose objects the API server refuses (the holes validation closes);
	// the rest break rules of EDL's own. Each is decoded as the controller
	// would read it, and its objects derived past validation.
	invalid, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	for _, c := range invalid {
		job := &v1.TrainingJob{}
		if err := yaml.UnmarshalStrict(c.YAML, job); err != nil {
			continue // the API server never stores it
		}
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			job.Namespace, job.UID = ns, types.UID("7c5ab1c4-0000-4000-8000-000000000000") // owner references need one
			v1.SetObjectDefaults_TrainingJob(job)
			refusals := dryRunDerived(t, job)
			if c.DerivedRefused {
				assert.NotEmpty(t, refusals, "the API server accepts the objects of %s: drop its '# derived: refused' line", c.Name)
			} else {
				assert.Empty(t, refusals, "the API server refuses objects of %s: mark it '# derived: refused'", c.Name)
			}
			for _, r := range refusals {
				t.Log(r)
			}
		})
	}

	// A dry run leaves nothing behind.
	rss, err := cp.Client.AppsV1().ReplicaSets(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, rss.Items)
	services, err := cp.Client.CoreV1().Services(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, services.Items)
}

// dryRunDerived builds a job's ReplicaSets and Services with the
// controller's builders, and a pod from each ReplicaSet's template as the
// ReplicaSet controller would make it (named <ReplicaSet>-<random>), and
// submits each to the API server in a dry run. It returns the refusals.
func dryRunDerived(t *testing.T, job *v1.TrainingJob) []string {
	t.Helper()
	if job.Spec.PriorityClassName != "" && len(validation.IsDNS1123Subdomain(job.Spec.PriorityClassName)) == 0 {
		ensurePriorityClass(t, job.Spec.PriorityClassName)
	}
	var refusals []string
	refused := func(what string, err error) {
		if err != nil {
			refusals = append(refusals, what+": "+err.Error())
		}
	}
	ctx, ns := testContext(t), job.Namespace
	replicas := map[v1.Role]int32{v1.RolePserver: job.Spec.Pserver.MinInstance, v1.RoleTrainer: job.Spec.Trainer.MinInstance}
	if job.Spec.FaultTolerant {
		replicas[v1.RoleMaster] = 1
	}
	for _, role := range []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer} {
		n, ok := replicas[role]
		if !ok {
			continue
		}
		rs := controller.ReplicaSet(job, role, n, nil)
		_, err := cp.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, dryRun)
		refused("ReplicaSet "+rs.Name, err)

		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: rs.Name + "-", Namespace: ns, Labels: rs.Spec.Template.Labels},
			Spec:       *rs.Spec.Template.Spec.DeepCopy(),
		}
		created, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, dryRun)
		refused("pod of ReplicaSet "+rs.Name, err)
		if err == nil {
			assert.LessOrEqual(t, len(created.Name), 63, "pod name %s", created.Name)
		}

		if role != v1.RoleTrainer {
			svc := controller.Service(job, role)
			_, err := cp.Client.CoreV1().Services(ns).Create(ctx, svc, dryRun)
			refused("Service "+svc.Name, err)
		}
	}
	return refusals
}

// ensurePriorityClass creates the PriorityClass a job names unless it
// exists (the Priority admission plugin refuses pods of a missing class),
// and deletes what it created when the test ends.
func ensurePriorityClass(t *testing.T, name string) {
	t.Helper()
	_, err := cp.Client.SchedulingV1().PriorityClasses().Create(testContext(t), &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Value:      1000,
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		err := cp.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		assert.NoError(t, err)
	})
}
