package controller

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestProgressContractObjects: the Role may get and patch the job's own
// progress ConfigMap and nothing else, and is bound to the job's trainer
// account alone, which the trainers run as.
func TestProgressContractObjects(t *testing.T) {
	job := torchJob()
	role := ProgressRole(job)
	require.Len(t, role.Rules, 1)
	assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{"mnist-progress"}, Verbs: []string{"get", "patch"}}, role.Rules[0])
	binding := ProgressRoleBinding(job)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: testNamespace, Name: "mnist-trainer"}}, binding.Subjects)
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	for _, o := range []string{ProgressConfigMap(job).Name, ProgressServiceAccount(job).Name, role.Name, binding.Name} {
		assert.NotEmpty(t, o)
	}
	for _, j := range []*v1.TrainingJob{job, builders.Job("mnist", testNamespace)} {
		for _, r := range roles(j) {
			pod := PodTemplate(j, r, nil).Spec
			assert.Equal(t, "mnist-progress", envOf(pod.Containers[0])[EnvProgressConfigMap], "%s", r)
			if r == v1.RoleTrainer {
				assert.Equal(t, "mnist-trainer", pod.ServiceAccountName)
			} else {
				assert.Empty(t, pod.ServiceAccountName, "%s: only trainers may write the progress", r)
			}
		}
	}
}

// TestSyncReadsProgress: the report in the job's ConfigMap becomes
// status.progress; a report that cannot be read keeps what was known,
// names the key, and is one Warning event.
func TestSyncReadsProgress(t *testing.T) {
	job := torchJob()
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.addPods(builders.RolePod(job, v1.RoleMaster, "mnist-master-0", builders.Ready()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", builders.Ready(), builders.OnNode("n1")),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-b", builders.Ready(), builders.OnNode("n2")))
	t0 := float64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	setProgress := func(data map[string]string) {
		cm := ProgressConfigMap(job)
		cm.Data = data
		require.NoError(t, f.kubeInf.Core().V1().ConfigMaps().Informer().GetIndexer().Update(cm))
	}
	at := func(s float64) string { return formatFloat(t0 + s) }
	setProgress(map[string]string{"done": "0", "total": "100000", "batch": "1000", "time": at(0), "run": "a"})
	f.settle("mnist")
	setProgress(map[string]string{"done": "5000", "total": "100000", "batch": "1000", "time": at(10), "run": "a"})
	f.settle("mnist") // the run's warm-up
	setProgress(map[string]string{"done": "10000", "total": "100000", "batch": "1000", "time": at(20), "run": "a"})
	f.settle("mnist")
	p := f.getJob("mnist").Status.Progress
	require.NotNil(t, p)
	assert.Equal(t, []v1.SizeThroughput{{Trainers: 2, Nodes: 2, Work: 5000, Millis: 10000}}, p.Measured,
		"the world size and nodes of the running trainers")
	assert.Equal(t, "500/s", p.Throughput)
	assert.Equal(t, int32(10), *p.Percent)
	assert.Equal(t, "3m", p.ETA)
	assert.Empty(t, f.events())

	setProgress(map[string]string{"done": "a lot", "time": at(30)})
	events := f.settle("mnist")
	p = f.getJob("mnist").Status.Progress
	assert.Contains(t, p.Error, "progress key done ")
	assert.Equal(t, int64(10000), p.Done, "what was known stays")
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning BadProgress progress key done ")
	f.settle("mnist")
	assert.Empty(t, f.events(), "one event per edge")
}

// TestSyncCreatesTheProgressContractOnce: a job whose ConfigMap exists
// creates none of it again; a ConfigMap of that name the job does not
// control is in the way.
func TestSyncCreatesTheProgressContractOnce(t *testing.T) {
	job := torchJob()
	f := newFixture(t)
	f.addJob(job)
	f.settle("mnist")
	f.reset()
	require.NoError(t, f.sync("mnist"))
	for _, w := range f.writeStrings() {
		assert.NotContains(t, w, "progress")
	}

	g := newFixture(t)
	g.addJob(job)
	foreign := &corev1.ConfigMap{}
	foreign.Name, foreign.Namespace = "mnist-progress", testNamespace
	require.NoError(t, g.kubeInf.Core().V1().ConfigMaps().Informer().GetIndexer().Add(foreign))
	require.Error(t, g.sync("mnist"))
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// TestSyncAnnouncesTheProgressContractOnce: a ConfigMap the informer does
// not hold (its trainers removed the label it is selected by) but the API
// server does is not created, nor announced, again on every sync.
func TestSyncAnnouncesTheProgressContractOnce(t *testing.T) {
	job := torchJob()
	f := newFixture(t)
	f.addJob(job)
	require.NoError(t, f.kube.Tracker().Add(ProgressConfigMap(job)))
	require.NoError(t, f.sync("mnist"))
	for _, e := range f.events() {
		assert.NotContains(t, e, "ConfigMap mnist-progress", "announced though it existed")
	}
}

// TestSyncBindsAChangedTrainerAccount: a trainer template whose service
// account changes gets the progress Role bound to the new account before
// the trainer ReplicaSet's pods run as it (else their reports would be
// refused), once; a change of the template that keeps the account binds
// nothing.
func TestSyncBindsAChangedTrainerAccount(t *testing.T) {
	job := torchJob()
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.settle("mnist")

	change := func(mutate func(*v1.TrainingJob)) {
		changed := f.getJob("mnist")
		mutate(changed)
		changed.Generation++
		f.updateJob(changed)
		f.reset()
		require.NoError(t, f.sync("mnist"))
	}
	change(func(j *v1.TrainingJob) {
		j.Spec.Trainer.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "vision"}}
	})
	writes := f.writeStrings()
	require.GreaterOrEqual(t, len(writes), 2, "%v", writes)
	assert.Regexp(t, `^create rolebindings mnist-progress-[0-9a-f]{8}$`, writes[0], "the binding first: %v", writes)
	assert.Equal(t, "patch replicasets mnist-trainer", writes[1])
	var created *rbacv1.RoleBinding
	for _, a := range f.writes() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "rolebindings" {
			created = c.GetObject().(*rbacv1.RoleBinding)
		}
	}
	require.NotNil(t, created, "%v", writes)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: testNamespace, Name: "vision"}}, created.Subjects)
	assert.Equal(t, "mnist-progress", created.RoleRef.Name)
	assert.Equal(t, job.Name, created.OwnerReferences[0].Name, "the job's, deleted with it")
	assert.Contains(t, f.events(), "Normal Created Created RoleBinding "+created.Name+": the trainers' new service account vision may write the training's progress")
	f.feedBack()

	change(func(j *v1.TrainingJob) { j.Spec.Trainer.Template.Labels = map[string]string{"team": "a"} })
	assert.Equal(t, []string{"patch replicasets mnist-trainer"}, f.writesOf("replicasets"))
	assert.Empty(t, f.writesOf("rolebindings"), "the same account: nothing to bind")
}
