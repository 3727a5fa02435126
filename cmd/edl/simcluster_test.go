package main

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/controller"
)

// simCluster is the cluster BenchmarkSimulatedCluster simulates: nodes
// nodes of 64 CPU / 256 GiB (apiNode) carrying 15 pods each. Ten of them
// are TrainingJobs' (one job for every 6 nodes, each a pserver and 59
// trainers of 4 CPU / 8 GiB, elastic from 2 to 120 trainers, Running), five
// are web Deployments' (1 CPU / 2 GiB, priority 1000, 50 pods a ReplicaSet),
// of which one in 200 is pending and unschedulable. The CPU load is 70%:
// the planner grows the jobs towards -max_load_desired and makes room for
// the pending web pods.
type simCluster struct{ nodes int }

const (
	simPodsPerJob   = 60 // a pserver and 59 trainers
	simWebPerNode   = 5
	simWebPerRS     = 50
	simPendingEvery = 200 // one web pod in this many is pending
	simWebPriority  = 1000
)

func (c simCluster) jobs() int    { return max(c.nodes/6, 1) }
func (c simCluster) webPods() int { return c.nodes * simWebPerNode }
func (c simCluster) webRS() int   { return (c.webPods() + simWebPerRS - 1) / simWebPerRS }
func (c simCluster) pods() int    { return c.jobs()*simPodsPerJob + c.webPods() }

func (c simCluster) job(i int) *v1.TrainingJob {
	res := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	job := &v1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%04d", i), Namespace: fmt.Sprintf("team-%02d", i%20),
			UID: types.UID(fmt.Sprintf("uid-job-%04d", i)), ResourceVersion: "1", Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, i%3600, 0, time.UTC))},
		Spec: v1.TrainingJobSpec{
			Image:   "paddlepaddle/paddlecloud-job:0.11",
			Trainer: v1.TrainerSpec{MinInstance: 2, MaxInstance: 120, Entrypoint: "python train.py", Workspace: "/workspace", Resources: res("4", "8Gi")},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: res("1", "2Gi")},
		},
	}
	v1.SetObjectDefaults_TrainingJob(job)
	job.ManagedFields = managedFields("kubectl-client-side-apply")
	job.Status.Phase, job.Status.Reason = v1.PhaseRunning, v1.ReasonRunning
	return job
}

func (c simCluster) jobList() *v1.TrainingJobList {
	out := &v1.TrainingJobList{Items: make([]v1.TrainingJob, 0, c.jobs())}
	for i := range c.jobs() {
		out.Items = append(out.Items, *c.job(i))
	}
	return out
}

// replicaSet is the job's ReplicaSet of role as the API server holds it.
func (c simCluster) replicaSet(job *v1.TrainingJob, role v1.Role) *appsv1.ReplicaSet {
	replicas := int32(1)
	if role == v1.RoleTrainer {
		replicas = simPodsPerJob - 1
	}
	rs := controller.ReplicaSet(job, role, replicas, nil)
	apiMeta(&rs.ObjectMeta, "edl")
	rs.Status = appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas, FullyLabeledReplicas: replicas, ObservedGeneration: 1}
	return rs
}

func (c simCluster) webReplicaSet(i int) *appsv1.ReplicaSet {
	labels := map[string]string{"app": fmt.Sprintf("web-%04d", i), "pod-template-hash": "5d8f7c9b4"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d-5d8f7c9b4", i), Namespace: "web", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("web-%04d", i), UID: "uid-deploy", Controller: ptr.To(true)}}}}
	spec := webPodSpec()
	spec.Priority, spec.PriorityClassName = ptr.To(int32(simWebPriority)), "web"
	rs.Spec = appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(simWebPerRS)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}
	apiMeta(&rs.ObjectMeta, "kube-controller-manager")
	return rs
}

// trainer is the k-th trainer pod of job, of its trainer ReplicaSet rs, on
// node node (a negative node: not bound yet), at resourceVersion rv.
func (c simCluster) trainer(job *v1.TrainingJob, rs *appsv1.ReplicaSet, k, node int, rv string) *corev1.Pod {
	p := apiPod(fmt.Sprintf("%s-trainer-%05d", job.Name, k), job.Namespace, rs, c.nodeName(node))
	p.ResourceVersion = rv
	if node < 0 {
		unbound(&p, false)
	}
	return &p
}

func (c simCluster) nodeName(node int) string {
	if node < 0 {
		return ""
	}
	return fmt.Sprintf("node-%05d", node%c.nodes)
}

// unbound makes p a pod the scheduler has not placed: just created, or
// tried and found unschedulable.
func unbound(p *corev1.Pod, unschedulable bool) {
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: p.Status.QOSClass}
	if unschedulable {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/10000 nodes are available: 10000 Insufficient cpu."}}
	}
}

func (c simCluster) list(resource string) kruntime.Object {
	switch resource {
	case "nodes":
		out := &corev1.NodeList{Items: make([]corev1.Node, 0, c.nodes)}
		for i := range c.nodes {
			out.Items = append(out.Items, apiNode(i))
		}
		return out
	case "replicasets":
		out := &appsv1.ReplicaSetList{}
		for i := range c.jobs() {
			job := c.job(i)
			out.Items = append(out.Items, *c.replicaSet(job, v1.RolePserver), *c.replicaSet(job, v1.RoleTrainer))
		}
		for i := range c.webRS() {
			out.Items = append(out.Items, *c.webReplicaSet(i))
		}
		return out
	case "services":
		out := &corev1.ServiceList{}
		for i := range c.jobs() {
			s := controller.Service(c.job(i), v1.RolePserver)
			apiMeta(&s.ObjectMeta, "edl")
			out.Items = append(out.Items, *s)
		}
		return out
	case "pods":
		out := &corev1.PodList{Items: make([]corev1.Pod, 0, c.pods())}
		n := 0 // pods are spread round-robin over the nodes
		for i := range c.jobs() {
			job := c.job(i)
			p := apiPod(job.Name+"-pserver-00000", job.Namespace, c.replicaSet(job, v1.RolePserver), c.nodeName(n))
			out.Items = append(out.Items, p)
			n++
			rs := c.replicaSet(job, v1.RoleTrainer)
			for k := range simPodsPerJob - 1 {
				out.Items = append(out.Items, *c.trainer(job, rs, k, n, "123456"))
				n++
			}
		}
		var rs *appsv1.ReplicaSet
		for i := range c.webPods() {
			if i%simWebPerRS == 0 {
				rs = c.webReplicaSet(i / simWebPerRS)
			}
			p := apiPod(fmt.Sprintf("%s-%05d", rs.Name, i), "web", rs, c.nodeName(n))
			if i%simPendingEvery == simPendingEvery-1 {
				unbound(&p, true)
			}
			out.Items = append(out.Items, p)
			n++
		}
		return out
	}
	return nil
}
