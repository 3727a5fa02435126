package integration

// The helpers the integration tests share: namespaces and contexts, the CRD,
// jobs and their pods, and edl in-process. [startEDLProc] runs edl
// as a binary — one replica on the shared control plane, or a fleet of
// replicas on a control plane of the test's own.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/controller"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
	"github.com/paddlepaddle/edl/pkg/reconnect"
	"github.com/paddlepaddle/edl/test/docs"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// testContext returns a context that ends with the test or after waitTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func requests(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}}
}

var (
	crdOnce sync.Once
	crdErr  error
)

// installCRD checks that thirdpartyresource.yaml is installed on the shared
// control plane (TestMain installs it, once for the package).
func installCRD(t *testing.T) {
	t.Helper()
	crdOnce.Do(func() { crdErr = applyCRD(cp) })
	require.NoError(t, crdErr, "install the TrainingJob CRD")
}

// applyCRD installs thirdpartyresource.yaml on plane.
func applyCRD(plane *framework.ControlPlane) error {
	root, err := framework.ModuleRoot()
	if err != nil {
		return err
	}
	return plane.ApplyCRD(context.Background(), filepath.Join(root, "thirdpartyresource.yaml"))
}

// jobClient returns the generated TrainingJob client of the shared cluster.
func jobClient(t *testing.T) tjclient.Interface {
	t.Helper()
	c, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)
	return c
}

// builders.JobOption changes a job that exampleJob builds.

// exampleJob is example/examplejob.yaml, placed in ns, changed by mutators.
func exampleJob(t *testing.T, ns string, mutators ...builders.JobOption) *v1.TrainingJob {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "example", "examplejob.yaml"))
	require.NoError(t, err)
	job := &v1.TrainingJob{}
	require.NoError(t, yaml.UnmarshalStrict(data, job))
	job.Namespace = ns
	for _, m := range mutators {
		m(job)
	}
	return job
}

// exampleJobs is every TrainingJob of example/, parsed strictly
// (docs.ExampleJobs), keyed by example/<file>/<job name>.
func exampleJobs(t *testing.T) map[string]*v1.TrainingJob {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	jobs, err := docs.ExampleJobs(root)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(jobs), 3)
	return jobs
}

func plain(job *v1.TrainingJob) { job.Spec.FaultTolerant = false }

// waitForJob waits until the job's status satisfies cond and returns it.
func waitForJob(t *testing.T, ns, name string, what string, cond func(*v1.TrainingJob) bool) *v1.TrainingJob {
	t.Helper()
	return waitForJobWithin(t, waitTimeout, ns, name, what, cond)
}

// waitForJobWithin is waitForJob with a timeout of its own.
func waitForJobWithin(t *testing.T, timeout time.Duration, ns, name string, what string, cond func(*v1.TrainingJob) bool) *v1.TrainingJob {
	t.Helper()
	var last *v1.TrainingJob
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		job, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = job
		return cond(job), nil
	})
	require.NoError(t, err, "job %s/%s never became %s; last status: %+v", ns, name, what, statusOf(last))
	return last
}

func statusOf(job *v1.TrainingJob) any {
	if job == nil {
		return nil
	}
	return job.Status
}

func phaseIs(phase v1.TrainingJobPhase) func(*v1.TrainingJob) bool {
	return func(job *v1.TrainingJob) bool { return job.Status.Phase == phase }
}

// podsOf lists the pods carrying a role label of the job.
func podsOf(t *testing.T, ns, label, job string) []corev1.Pod {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{label: job}).String(),
	})
	require.NoError(t, err)
	return pods.Items
}

// scaleTrainers sets the trainer ReplicaSet's replicas, as the autoscaler does.
func scaleTrainers(t *testing.T, ns, job string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := cp.Client.AppsV1().ReplicaSets(ns).Patch(testContext(t), v1.ReplicaSetName(job, v1.RoleTrainer),
		types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// eventReasons lists the reasons of the events recorded for an object.
func eventReasons(t *testing.T, ns, name string) []string {
	t.Helper()
	events, err := cp.Client.CoreV1().Events(ns).List(testContext(t), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name,
	})
	require.NoError(t, err)
	var reasons []string
	for _, e := range events.Items {
		for i := int32(0); i < max(e.Count, 1); i++ {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// assertEventReasons asserts that the events of the named object come to be
// exactly want. Events are written in the background by the recorder's
// broadcaster, after the status that marks the edge, so a list made at once
// may still miss the last one.
func assertEventReasons(t *testing.T, ns, name string, want []string, msgAndArgs ...any) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got = eventReasons(t, ns, name)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	assert.Equal(t, want, got, msgAndArgs...)
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// startController runs the TrainingJob controller in-process on the shared
// control plane, its informers limited to one namespace so that tests cannot
// disturb each other's jobs, until the test ends.
func startController(t *testing.T, ns string) {
	t.Helper()
	installCRD(t)
	runEDL(t, cp, ns, nil)
}

// runEDL runs the controller, and the autoscaler when scaling is not nil,
// in-process against plane until the test ends: the same wiring as cmd/edl.
// A namespace limits the controller's informers to it; the autoscaler always
// sees the whole cluster.
func runEDL(t *testing.T, plane *framework.ControlPlane, ns string, scaling *autoscaler.Config) {
	t.Helper()
	logger := log.New("test", t.Name())
	logger.SetHandler(log.LvlFilterHandler(log.LvlInfo, log.StreamHandler(testWriter{t}, log.LogfmtFormat())))
	cfg := rest.CopyConfig(plane.Config)
	reconnect.Configure(cfg, reconnect.DefaultInterval, logger)
	kubeClient, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	tj, err := tjclient.NewForConfig(cfg)
	require.NoError(t, err)

	kubeInformers := informers.NewSharedInformerFactoryWithOptions(kubeClient, 0, informers.WithNamespace(ns))
	jobInformers := tjinformers.NewSharedInformerFactoryWithOptions(tj, 0, tjinformers.WithNamespace(ns))
	podInformer := kubeInformers.Core().V1().Pods()
	// The transforms cmd/edl installs.
	require.NoError(t, podInformer.Informer().SetTransform(cluster.TransformPod))
	require.NoError(t, kubeInformers.Apps().V1().ReplicaSets().Informer().SetTransform(cluster.TransformReplicaSet))
	require.NoError(t, kubeInformers.Core().V1().Services().Informer().SetTransform(cluster.TransformService))

	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1.AddToScheme(scheme))
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "edl-controller"})

	jobInformer := jobInformers.Paddlepaddle().V1().TrainingJobs()
	rsInformer := kubeInformers.Apps().V1().ReplicaSets()
	ctrl, err := controller.New(controller.Config{KubeClient: kubeClient, TJClient: tj, JobInformer: jobInformer,
		ReplicaSetInformer: rsInformer, ServiceInformer: kubeInformers.Core().V1().Services(), PodInformer: podInformer,
		ConfigMapInformer: kubeInformers.Core().V1().ConfigMaps(),
		PDBInformer:       kubeInformers.Policy().V1().PodDisruptionBudgets(),
		Recorder:          recorder, Logger: logger, GangAdmission: scaling != nil && scaling.GangAdmission})
	require.NoError(t, err)
	var scaler *autoscaler.Autoscaler
	var clusterInformers informers.SharedInformerFactory
	if scaling != nil {
		// The tracker needs every pod and node of the cluster.
		clusterInformers = informers.NewSharedInformerFactory(kubeClient, 0)
		clusterPods := clusterInformers.Core().V1().Pods()
		require.NoError(t, clusterPods.Informer().SetTransform(cluster.TransformPod))
		require.NoError(t, clusterInformers.Core().V1().Nodes().Informer().SetTransform(cluster.TransformNode))
		tracker, err := cluster.New(cluster.Config{PodInformer: clusterPods, NodeInformer: clusterInformers.Core().V1().Nodes(),
			QuotaInformer: clusterInformers.Core().V1().ResourceQuotas(), Logger: logger,
			LimitRangeInformer:   clusterInformers.Core().V1().LimitRanges(),
			RuntimeClassInformer: clusterInformers.Node().V1().RuntimeClasses()})
		require.NoError(t, err)
		cfg := *scaling
		cfg.KubeClient, cfg.TJClient, cfg.Tracker = kubeClient, tj, tracker
		cfg.JobInformer, cfg.ReplicaSetInformer = jobInformer, rsInformer
		cfg.PriorityClassInformer = clusterInformers.Scheduling().V1().PriorityClasses()
		cfg.PodInformer, cfg.NodeInformer = clusterPods, clusterInformers.Core().V1().Nodes()
		cfg.QueueInformer = jobInformers.Paddlepaddle().V1().TrainingQueues() // cluster-scoped: all of them
		cfg.Recorder, cfg.Logger, cfg.Clock = recorder, logger, clock.RealClock{}
		scaler = autoscaler.New(cfg)
	}

	ctx, cancel := context.WithCancel(context.Background())
	kubeInformers.Start(ctx.Done())
	jobInformers.Start(ctx.Done())
	if clusterInformers != nil {
		clusterInformers.Start(ctx.Done())
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ctrl.Run(ctx, 2); err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	if scaler != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := scaler.Run(ctx); err != nil {
				t.Errorf("autoscaler: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		kubeInformers.Shutdown()
		jobInformers.Shutdown()
		if clusterInformers != nil {
			clusterInformers.Shutdown()
		}
		broadcaster.Shutdown()
	})
}

// testWriter sends the controller's log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
