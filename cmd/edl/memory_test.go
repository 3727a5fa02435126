package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/controller"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
	"github.com/paddlepaddle/edl/pkg/watch"
)

// BenchmarkInformerMemory measures the heap EDL's informer caches and the
// tracker hold on a cluster of 5,000 nodes, 1,000 TrainingJobs and 150,000
// pods, without an API server: the informers are cmd/edl's, with its
// transforms (watch.SetTransforms), the controller's pod index and the tracker's
// handlers, listing from a fake clientset that builds each list when asked
// and keeps nothing. Each job has 100 trainers, 2 pservers and a master, its
// three ReplicaSets and two Services as the controller builds them; 47,000
// other pods and 2,000 other ReplicaSets (of Deployments) and Services make up
// the rest. Every object carries what the API server adds: managed fields,
// the service-account volume, defaults and a running status.
//
// It reports the heap per object of each kind once its informer synced
// (B/pod includes the tracker's record and the controller's index entry)
// and the total, and what 50,000 pods on 2,000 nodes would take.
func BenchmarkInformerMemory(b *testing.B) {
	const nodes, jobs, trainers, otherPods, otherRS = 5000, 1000, 100, 47000, 2000
	discard := log.New()
	discard.SetHandler(log.DiscardHandler())
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		lists := fakeLists{nodes: nodes, jobs: jobs, trainers: trainers, otherPods: otherPods, otherRS: otherRS}
		kube := fake.NewClientset()
		for _, r := range []string{"nodes", "pods", "replicasets", "services"} {
			kube.PrependReactor("list", r, func(a clienttesting.Action) (bool, kruntime.Object, error) {
				return true, lists.list(a.GetResource().Resource), nil
			})
		}
		tj := tjfake.NewClientset()
		tj.PrependReactor("list", "trainingjobs", func(clienttesting.Action) (bool, kruntime.Object, error) {
			return true, lists.jobList(), nil
		})
		kubeInformers := informers.NewSharedInformerFactory(kube, 0)
		jobInformers := tjinformers.NewSharedInformerFactory(tj, 0)
		if err := watch.SetTransforms(kubeInformers); err != nil {
			b.Fatal(err)
		}
		pods, nodeInf := kubeInformers.Core().V1().Pods(), kubeInformers.Core().V1().Nodes()
		rs, svc := kubeInformers.Apps().V1().ReplicaSets(), kubeInformers.Core().V1().Services()
		jobInf := jobInformers.Paddlepaddle().V1().TrainingJobs()
		if _, err := controller.New(controller.Config{KubeClient: kube, TJClient: tj, JobInformer: jobInf,
			ReplicaSetInformer: rs, ServiceInformer: svc, PodInformer: pods,
			ConfigMapInformer: kubeInformers.Core().V1().ConfigMaps(),
			PDBInformer:       kubeInformers.Policy().V1().PodDisruptionBudgets(),
			Recorder:          record.NewFakeRecorder(0), Logger: discard}); err != nil {
			b.Fatal(err)
		}
		tracker, err := cluster.New(cluster.Config{PodInformer: pods, NodeInformer: nodeInf})
		if err != nil {
			b.Fatal(err)
		}

		before := heap()
		var perKind []float64
		for _, s := range []struct {
			informer cache.SharedIndexInformer
			count    int
		}{
			{jobInf.Informer(), jobs},
			{nodeInf.Informer(), nodes},
			{rs.Informer(), 3*jobs + otherRS},
			{svc.Informer(), 2*jobs + otherRS},
			{pods.Informer(), jobs*(trainers+3) + otherPods},
		} {
			start := heap()
			go s.informer.RunWithContext(ctx)
			if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
				b.Fatal("the informer did not sync")
			}
			if got := len(s.informer.GetStore().ListKeys()); got != s.count {
				b.Fatalf("%d objects listed, want %d", got, s.count)
			}
			perKind = append(perKind, float64(heap()-start)/float64(s.count))
		}
		if !cache.WaitForCacheSync(ctx.Done(), tracker.HasSynced) {
			b.Fatal("the tracker did not sync")
		}
		total := heap() - before
		if r := tracker.InquiryResource(); r.NodeCount != nodes || len(r.Trainers) != jobs {
			b.Fatalf("the tracker counts %d nodes and %d jobs", r.NodeCount, len(r.Trainers))
		}
		b.ReportMetric(perKind[0], "B/job")
		b.ReportMetric(perKind[1], "B/node")
		b.ReportMetric(perKind[2], "B/replicaset")
		b.ReportMetric(perKind[3], "B/service")
		b.ReportMetric(perKind[4], "B/pod")
		b.ReportMetric(float64(total)/(1<<20), "MiB-total")
		at50k := perKind[1]*2000 + perKind[4]*50000 + (perKind[0]+3*perKind[2]+2*perKind[3])*333
		b.ReportMetric(at50k/(1<<20), "MiB-at-50k-pods")
		runtime.KeepAlive(tracker)
		cancel()
	}
}

// heap is the live heap after a full collection.
func heap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fakeLists builds the objects of BenchmarkInformerMemory's cluster.
type fakeLists struct {
	nodes, jobs, trainers, otherPods, otherRS int
}

func (l fakeLists) job(i int) *v1.TrainingJob {
	job := &v1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%04d", i), Namespace: fmt.Sprintf("team-%02d", i%20),
			UID: types.UID(fmt.Sprintf("uid-job-%04d", i)), ResourceVersion: "1", Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: v1.TrainingJobSpec{
			Image: "paddlepaddle/paddlecloud-job:0.11", FaultTolerant: true,
			Trainer: v1.TrainerSpec{MinInstance: 10, MaxInstance: 200, Entrypoint: "python train.py --epochs 30",
				Workspace: "/workspace", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m"), corev1.ResourceMemory: resource.MustParse("8Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m"), corev1.ResourceMemory: resource.MustParse("8Gi")}}},
			Pserver: v1.PserverSpec{MinInstance: 2, MaxInstance: 2},
		},
	}
	v1.SetObjectDefaults_TrainingJob(job)
	job.ManagedFields = managedFields("kubectl-client-side-apply")
	job.Status.Phase = v1.PhaseRunning
	return job
}

func (l fakeLists) jobList() *v1.TrainingJobList {
	out := &v1.TrainingJobList{}
	for i := range l.jobs {
		out.Items = append(out.Items, *l.job(i))
	}
	return out
}

func (l fakeLists) list(resource string) kruntime.Object {
	switch resource {
	case "nodes":
		out := &corev1.NodeList{}
		for i := range l.nodes {
			out.Items = append(out.Items, apiNode(i))
		}
		return out
	case "replicasets":
		out := &appsv1.ReplicaSetList{}
		for i := range l.jobs {
			job := l.job(i)
			for _, role := range []v1.Role{v1.RoleTrainer, v1.RolePserver, v1.RoleMaster} {
				rs := controller.ReplicaSet(job, role, 2, nil)
				apiMeta(&rs.ObjectMeta, "edl")
				rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, FullyLabeledReplicas: 2, ObservedGeneration: 1}
				out.Items = append(out.Items, *rs)
			}
		}
		for i := range l.otherRS {
			rs := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d-5d8f7c9b4", i), Namespace: "web",
				Labels:          map[string]string{"app": fmt.Sprintf("web-%04d", i), "pod-template-hash": "5d8f7c9b4"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("web-%04d", i), UID: "uid-deploy", Controller: ptr.To(true)}}}}
			replicas := int32(10)
			rs.Spec = appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: rs.Labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rs.Labels}, Spec: webPodSpec()}}
			apiMeta(&rs.ObjectMeta, "kube-controller-manager")
			out.Items = append(out.Items, rs)
		}
		return out
	case "services":
		out := &corev1.ServiceList{}
		for i := range l.jobs {
			job := l.job(i)
			for _, role := range []v1.Role{v1.RolePserver, v1.RoleMaster} {
				s := controller.Service(job, role)
				apiMeta(&s.ObjectMeta, "edl")
				if s.Spec.ClusterIP == "" {
					s.Spec.ClusterIP = fmt.Sprintf("10.96.%d.%d", i/250, i%250)
				}
				s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
				s.Spec.Type, s.Spec.SessionAffinity = corev1.ServiceTypeClusterIP, corev1.ServiceAffinityNone
				out.Items = append(out.Items, *s)
			}
		}
		for i := range l.otherRS {
			s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d", i), Namespace: "web",
				Labels: map[string]string{"app": fmt.Sprintf("web-%04d", i)}},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": fmt.Sprintf("web-%04d", i)}, Type: corev1.ServiceTypeClusterIP,
					ClusterIP: "10.97.0.1", ClusterIPs: []string{"10.97.0.1"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
			apiMeta(&s.ObjectMeta, "kubectl")
			out.Items = append(out.Items, s)
		}
		return out
	case "pods":
		out := &corev1.PodList{}
		n := 0
		node := func() string { n++; return fmt.Sprintf("node-%05d", n%l.nodes) }
		for i := range l.jobs {
			job := l.job(i)
			for _, role := range []v1.Role{v1.RoleTrainer, v1.RolePserver, v1.RoleMaster} {
				rs := controller.ReplicaSet(job, role, 0, nil)
				count := map[v1.Role]int{v1.RoleTrainer: l.trainers, v1.RolePserver: 2, v1.RoleMaster: 1}[role]
				for k := range count {
					out.Items = append(out.Items, apiPod(fmt.Sprintf("%s-%05d", rs.Name, k), job.Namespace, rs, node()))
				}
			}
		}
		for i := range l.otherPods {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d-5d8f7c9b4", i%l.otherRS), UID: "uid-web-rs",
				Labels: map[string]string{"app": fmt.Sprintf("web-%04d", i%l.otherRS), "pod-template-hash": "5d8f7c9b4"}}}
			rs.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rs.Labels}, Spec: webPodSpec()}
			out.Items = append(out.Items, apiPod(fmt.Sprintf("%s-%05d", rs.Name, i), "web", rs, node()))
		}
		return out
	}
	return nil
}

// managedFields is a typical managed-fields entry of an object's manager.
func managedFields(manager string) []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: ptr.To(metav1.Now()), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(
			`{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0c1e5b0e\"}":{}}},` +
				`"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:env":{".":{}},"f:image":{},"f:imagePullPolicy":{},` +
				`"f:name":{},"f:ports":{".":{}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},` +
				`"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},` +
				`"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},` +
				`"f:terminationGracePeriodSeconds":{}}}`)}}
}

// apiMeta adds what the API server keeps in every object's metadata.
func apiMeta(m *metav1.ObjectMeta, manager string) {
	m.UID = types.UID(fmt.Sprintf("%s-%s-0c1e5b0e-7d2f-4c1a-9b7e-2f1d3c4b5a69", m.Namespace, m.Name))
	m.ResourceVersion, m.Generation = "123456", 1
	m.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m.ManagedFields = managedFields(manager)
}

func webPodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27",
		Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
		Env:   []corev1.EnvVar{{Name: "WORKERS", Value: "4"}, {Name: "LOG_LEVEL", Value: "info"}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}}}}
}

// apiPod is a running pod of rs's template as the API server stores it.
func apiPod(name, namespace string, rs *appsv1.ReplicaSet, node string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: *rs.Spec.Template.ObjectMeta.DeepCopy(), Spec: *rs.Spec.Template.Spec.DeepCopy()}
	p.Name, p.Namespace, p.GenerateName = name, namespace, rs.Name+"-"
	p.Labels["pod-template-hash"] = "5d8f7c9b4"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	apiMeta(&p.ObjectMeta, "kube-controller-manager")
	p.ManagedFields = append(p.ManagedFields, managedFields("kubelet")...)
	spec := &p.Spec
	spec.NodeName, spec.ServiceAccountName, spec.SchedulerName = node, "default", "default-scheduler"
	spec.RestartPolicy, spec.DNSPolicy, spec.TerminationGracePeriodSeconds = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, ptr.To(int64(30))
	spec.EnableServiceLinks, spec.Priority, spec.PreemptionPolicy = ptr.To(true), ptr.To(int32(0)), ptr.To(corev1.PreemptLowerPriority)
	spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))}}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}}},
		DefaultMode: ptr.To(int32(420))}}})
	started := metav1.NewTime(time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.1.7", HostIPs: []corev1.HostIP{{IP: "10.0.1.7"}},
		PodIP: "10.244.3.17", PodIPs: []corev1.PodIP{{IP: "10.244.3.17"}}, StartTime: &started, QOSClass: corev1.PodQOSGuaranteed}
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: started})
	}
	for _, c := range spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true, Started: ptr.To(true),
			Image: c.Image, ImageID: "docker.io/library/" + c.Image + "@sha256:0c1e5b0e7d2f4c1a9b7e2f1d3c4b5a690c1e5b0e7d2f4c1a9b7e2f1d3c4b5a69",
			ContainerID: "containerd://0c1e5b0e7d2f4c1a9b7e2f1d3c4b5a690c1e5b0e7d2f4c1a9b7e2f1d3c4b5a69",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}})
	}
	return p
}

// apiNode is a Ready node as a kubelet reports it.
func apiNode(i int) corev1.Node {
	name := fmt.Sprintf("node-%05d", i)
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("500Gi")}
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m6i.16xlarge",
		"topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": fmt.Sprintf("us-east-1%c", 'a'+i%3)},
		Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.3.0/24", PodCIDRs: []string{"10.244.3.0/24"}, ProviderID: "aws:///us-east-1a/i-0c1e5b0e7d2f4c1a9"},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.7"}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: "0c1e5b0e7d2f4c1a9b7e2f1d3c4b5a69", SystemUUID: "ec2-0c1e5b0e", BootID: "7d2f4c1a",
				KernelVersion: "6.1.0", OSImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "v1.36.0",
				OperatingSystem: "linux", Architecture: "amd64"}}}
	apiMeta(&n.ObjectMeta, "kubelet")
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		status := corev1.ConditionFalse
		if c == corev1.NodeReady {
			status = corev1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: status, LastHeartbeatTime: now,
			LastTransitionTime: now, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"})
	}
	for k := range 30 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example.com/team/image-%d@sha256:0c1e5b0e7d2f4c1a9b7e2f1d3c4b5a69", k)}, SizeBytes: 1 << 28})
	}
	return n
}
