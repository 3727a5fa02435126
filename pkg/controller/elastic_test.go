package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/framework/pytorch"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func torchJob(opts ...builders.JobOption) *v1.TrainingJob {
	return builders.Job("mnist", testNamespace, append([]builders.JobOption{
		builders.PyTorch("python3 /workspace/train.py --epochs 3"), builders.Trainers(1, 3)}, opts...)...)
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			out[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
			continue
		}
		out[e.Name] = e.Value
	}
	return out
}

// TestTorchJobObjects: a PyTorch job runs a master hosting the c10d store
// behind <job>-master:29400 and trainers running torchrun with the PET_*
// contract; it has no pservers.
func TestTorchJobObjects(t *testing.T) {
	job := torchJob(builders.Elastic(v1.ElasticPolicy{NProcPerNode: ptr.To[int32](2),
		RdzvConf: []v1.RdzvConf{{Key: "join_timeout", Value: "600"}}}))
	assert.Equal(t, []v1.Role{v1.RoleMaster, v1.RoleTrainer}, roles(job))

	master := ReplicaSet(job, v1.RoleMaster, 1, nil).Spec.Template.Spec
	c := master.Containers[0]
	require.Len(t, c.Command, 4)
	assert.Equal(t, []string{"python3", "-c"}, c.Command[:2])
	assert.Contains(t, c.Command[2], "TCPStore('0.0.0.0', int(sys.argv[1]), is_master=True, wait_for_workers=False)")
	assert.Equal(t, "29400", c.Command[3])
	assert.Equal(t, []corev1.ContainerPort{{Name: "rdzv", ContainerPort: 29400, Protocol: corev1.ProtocolTCP}}, c.Ports)
	svc := Service(job, v1.RoleMaster)
	assert.Equal(t, "mnist-master", svc.Name)
	assert.Equal(t, []corev1.ServicePort{{Name: "rdzv", Port: 29400, TargetPort: intstr.FromInt32(29400), Protocol: corev1.ProtocolTCP}}, svc.Spec.Ports)
	assert.Empty(t, svc.Spec.ClusterIP, "a ClusterIP Service: trainers reach the store by its name")

	trainer := ReplicaSet(job, v1.RoleTrainer, 1, nil).Spec.Template.Spec
	c = trainer.Containers[0]
	assert.Equal(t, []string{"python3", "-c", pytorch.Wrapper, "/workspace/train.py", "--epochs", "3"}, c.Command)
	assert.Empty(t, c.Ports)
	env := envOf(c)
	for k, want := range map[string]string{
		"PET_NNODES":                         "1:3",
		"PET_NPROC_PER_NODE":                 "2",
		"PET_RDZV_BACKEND":                   "c10d",
		"PET_RDZV_ENDPOINT":                  "mnist-master:29400",
		"PET_RDZV_ID":                        "uid-mnist",
		"PET_RDZV_CONF":                      "is_host=false,join_timeout=600,last_call_timeout=3",
		"PET_MAX_RESTARTS":                   "0",
		"PET_LOCAL_ADDR":                     "fieldRef:status.podIP",
		"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
	} {
		assert.Equal(t, want, env[k], k)
	}
	assert.NotContains(t, env, "PADDLE_TRAINING_ROLE", "no launcher variables")
	assert.Equal(t, ptr.To[int64](30), trainer.TerminationGracePeriodSeconds, "a removed trainer has time to checkpoint")
	assert.Nil(t, master.TerminationGracePeriodSeconds)
}

func TestTorchArgs(t *testing.T) {
	for entry, want := range map[string][]string{
		"python3 /workspace/train.py":   {"/workspace/train.py"},
		"python train.py --lr 0.1":      {"train.py", "--lr", "0.1"},
		"/usr/bin/train":                {"--no-python", "/usr/bin/train"},
		"python3 train.py --name 'a b'": {"--no-python", "sh", "-c", "python3 train.py --name 'a b'"},
		"train.sh > /tmp/log":           {"--no-python", "sh", "-c", "train.sh > /tmp/log"},
		// The user's own launch lines, as written.
		"torchrun --log-dir /tmp/l train.py --lr 0.1":             {"--log-dir", "/tmp/l", "train.py", "--lr", "0.1"},
		"python3 -m torch.distributed.run train.py":               {"train.py"},
		"/usr/bin/python3.12 -m torch.distributed.run -m mypkg.x": {"-m", "mypkg.x"},
		"python3 -u train.py":                                     {"--no-python", "python3", "-u", "train.py"},
		"python3 -X dev -m mypkg.train":                           {"--no-python", "python3", "-X", "dev", "-m", "mypkg.train"},
		"/usr/bin/python3 train.py":                               {"train.py"},
	} {
		assert.Equal(t, want, pytorch.Args(entry), entry)
	}
}

// TestSyncCreatesATorchJob: the master's budget, the progress contract,
// the master's ReplicaSet and Service, then the trainers'; no pserver
// object.
func TestSyncCreatesATorchJob(t *testing.T) {
	f := newFixture(t)
	f.addJob(torchJob())
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{
		"create poddisruptionbudgets mnist-master",
		"create serviceaccounts mnist-trainer",
		"create roles mnist-progress",
		"create rolebindings mnist-progress",
		"create configmaps mnist-progress",
		"create services mnist-master",
		"create replicasets mnist-master",
		"create replicasets mnist-trainer",
		"update trainingjobs/status mnist",
	}, f.writeStrings())
}

// TestSyncFailsATorchJobPastItsBudget: the failure is the job's edge: a
// Warning event after the status write, and (keeping none of its pods)
// every ReplicaSet goes to 0 —
// the master, the job's last pod to go, once no trainer pod is left.
func TestSyncFailsATorchJobPastItsBudget(t *testing.T) {
	f := newFixture(t)
	job := f.addJob(torchJob(builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](0)}), builders.CleanPods(v1.CleanPodPolicyAll)))
	f.addJobObjects(job, 1)
	t0 := time.Now().Add(-time.Hour)
	f.addPods(builders.RolePod(job, v1.RoleMaster, "mnist-master-0", builders.Ready(), builders.RunningSince(t0)),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", builders.Ready(), builders.Restarts(1),
			builders.LastRun(2, t0.Add(time.Minute), t0.Add(2*time.Minute), "train.py: error: argument --epochs: invalid int value: 'x'")))
	events := f.settle("mnist")
	got := f.getJob("mnist")
	assert.Equal(t, v1.PhaseFailed, got.Status.Phase)
	assert.Equal(t, v1.ReasonTooManyFailures, got.Status.Reason)
	assert.Contains(t, got.Status.Message, "exited with code 2: train.py: error: argument --epochs: invalid int value: 'x'")
	assert.Equal(t, int32(0), *f.getReplicaSet("mnist-trainer").Spec.Replicas)
	assert.Equal(t, int32(1), *f.getReplicaSet("mnist-master").Spec.Replicas, "while a trainer pod is left")
	assert.Contains(t, strings.Join(events, "\n"), "Warning Failed the training failed 1 times")

	require.NoError(t, f.podIndexer().Delete(cached(t, builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a"))))
	f.settle("mnist")
	assert.Equal(t, int32(0), *f.getReplicaSet("mnist-master").Spec.Replicas, "the trainers gone, the master goes")
}

// TestTorchResizeCost: a growth is counted and priced from its time until
// every trainer is Ready; a scale-down is counted and keeps the price.
func TestTorchResizeCost(t *testing.T) {
	job := torchJob()
	roles := roles(job)
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	job.Status.LastScale = &v1.ScaleRecord{Time: metav1.NewTime(t0), From: 1, To: 2}
	obs := observation(job, roles,
		builders.RolePod(job, v1.RoleMaster, "mnist-master-0", builders.Ready()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", builders.Ready()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-b", builders.NotReady()))
	obs.replicaSets[v1.RoleTrainer] = ReplicaSet(job, v1.RoleTrainer, 2, nil)
	obs.now = t0.Add(10 * time.Second)
	status := computeStatus(job, obs, roles)
	assert.Equal(t, int32(1), status.Resize.Count)
	assert.Nil(t, status.Resize.LastCost, "not every trainer is Ready yet")

	job.Status = status
	obs = observation(job, roles,
		builders.RolePod(job, v1.RoleMaster, "mnist-master-0", builders.Ready()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", builders.Ready()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-b", builders.Ready()))
	obs.replicaSets[v1.RoleTrainer] = ReplicaSet(job, v1.RoleTrainer, 2, nil)
	obs.now = t0.Add(42 * time.Second)
	status = computeStatus(job, obs, roles)
	require.NotNil(t, status.Resize.LastCost)
	assert.Equal(t, 42*time.Second, status.Resize.LastCost.Duration)
	assert.Equal(t, int32(1), status.Resize.Count, "the same resize is counted once")

	job.Status = status
	job.Status.LastScale = &v1.ScaleRecord{Time: metav1.NewTime(t0.Add(time.Minute)), From: 2, To: 1}
	obs.now = t0.Add(61 * time.Second)
	status = computeStatus(job, obs, roles)
	assert.Equal(t, int32(2), status.Resize.Count)
	assert.Equal(t, 42*time.Second, status.Resize.LastCost.Duration, "a scale-down keeps the growth's price")
}

// TestPaddleJobHasNoResizeStatus: a PaddlePaddle job's status is as before.
func TestPaddleJobHasNoResizeStatus(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.FaultTolerant())
	job.Status.LastScale = &v1.ScaleRecord{Time: metav1.Now(), From: 2, To: 3}
	status := computeStatus(job, observation(job, roles(job)), roles(job))
	assert.Zero(t, status.Resize)
	assert.Equal(t, []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer}, roles(job))
}
