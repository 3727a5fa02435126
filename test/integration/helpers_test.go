package integration

// The helpers the integration tests share: namespaces and contexts, the CRD,
// jobs and their pods, edl in-process, and edl as a binary — one replica on
// the shared control plane, or a fleet of replicas on a control plane of the
// test's own.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	log "github.com/inconshreveable/log15"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
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
	"k8s.io/utils/ptr"
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

// jobMutator changes a job that exampleJob builds.
type jobMutator func(*v1.TrainingJob)

// exampleJob is example/examplejob.yaml, placed in ns, changed by mutators.
func exampleJob(t *testing.T, ns string, mutators ...jobMutator) *v1.TrainingJob {
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

func withTrainers(minInstance, maxInstance int32) jobMutator {
	return func(job *v1.TrainingJob) {
		job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance = minInstance, maxInstance
	}
}

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
		Recorder: recorder, Logger: logger, GangAdmission: scaling != nil && scaling.GangAdmission})
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
			QuotaInformer: clusterInformers.Core().V1().ResourceQuotas(), Logger: logger})
		require.NoError(t, err)
		cfg := *scaling
		cfg.KubeClient, cfg.TJClient, cfg.Tracker = kubeClient, tj, tracker
		cfg.JobInformer, cfg.ReplicaSetInformer = jobInformer, rsInformer
		cfg.PriorityClassInformer = clusterInformers.Scheduling().V1().PriorityClasses()
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

// edlBinary is framework.BuildEDL's edl binary.
func edlBinary(t *testing.T) string {
	t.Helper()
	bin, err := framework.BuildEDL()
	require.NoError(t, err)
	return bin
}

// edlProc is a run of the built edl binary in a test, its HTTP server on a
// free port of the loopback interface.
type edlProc struct {
	*framework.EDL
	t *testing.T
}

// startEDLProc runs edl with args and -http_addr 127.0.0.1:0 until the test
// ends. A failed test logs what it logged.
func startEDLProc(t *testing.T, args ...string) *edlProc {
	t.Helper()
	e := framework.StartEDLForTest(t, framework.EDLOptions{Args: append(args, "-http_addr", "127.0.0.1:0")})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edl (pid %d) logged:\n%s", e.Pid(), e.Log())
		}
	})
	return &edlProc{EDL: e, t: t}
}

// logged waits until the log matches re and returns its first group.
func (p *edlProc) logged(re *regexp.Regexp) string {
	p.t.Helper()
	m, err := p.WaitForLine(testContext(p.t), re, waitTimeout)
	require.NoError(p.t, err)
	return m[1]
}

// waitIdentity waits until the replica has joined the election and
// returns its name in the lease.
func (p *edlProc) waitIdentity() string { return p.logged(framework.EDLIdentityLine) }

// get fetches a path of the replica's HTTP server.
func (p *edlProc) get(path string) (int, string) {
	p.t.Helper()
	resp, err := http.Get("http://" + p.logged(framework.EDLServingLine) + path)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	return resp.StatusCode, string(body)
}

// metric returns the value of one series of /metrics, written as it is
// exposed (name{labels}); 0 when absent.
func (p *edlProc) metric(series string) float64 {
	p.t.Helper()
	code, body := p.get("/metrics")
	require.Equal(p.t, http.StatusOK, code)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(p.t, err, line)
			return f
		}
	}
	return 0
}

// waitFor polls cond until it holds.
func (p *edlProc) waitFor(what string, cond func() bool) {
	p.t.Helper()
	err := wait.PollUntilContextTimeout(testContext(p.t), 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	require.NoError(p.t, err, "never: %s", what)
}

// stop sends SIGTERM and waits for the exit.
func (p *edlProc) stop() error { return p.Stop(waitTimeout) }

// wait waits for the process to exit by itself.
func (p *edlProc) wait() error {
	p.t.Helper()
	exited, err := p.Wait(waitTimeout)
	if !exited {
		p.t.Fatalf("edl did not exit; it logged:\n%s", p.Log())
	}
	return err
}

// The leader election a fleet runs edl with: short, so that a failover takes
// seconds, and the defaults' proportions.
const (
	leaderLeaseNamespace = "paddlecloud" // edl's default -leader_elect_namespace
	leaderLeaseName      = "edl-controller"
	fleetLeaseDuration   = 4 * time.Second
	fleetRenewDeadline   = 3 * time.Second
	fleetRetryPeriod     = 500 * time.Millisecond
)

// leaseHolder reads the holder of edl's leader Lease in ns; empty when
// nobody holds it or it does not exist yet.
func leaseHolder(ctx context.Context, plane *framework.ControlPlane, ns string) string {
	lease, err := plane.Client.CoordinationV1().Leases(ns).Get(ctx, leaderLeaseName, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// edlRun is one run of a fleet's replica. A replica is a sequence of runs: a
// killed run is followed by a fresh process with a fresh lease identity.
type edlRun struct {
	*framework.EDL
	replica string
}

// fleet starts replicas of the built edl binary out of cluster against a
// control plane of the test's own, and keeps every run: at the end of the
// test it kills what still runs, and when the test failed it logs how each
// run ended.
type fleet struct {
	t    *testing.T
	args []string

	mu   sync.Mutex
	runs []*edlRun
}

func newFleet(t *testing.T, plane *framework.ControlPlane, flags ...string) *fleet {
	t.Helper()
	return newFleetElecting(t, plane, append(flags,
		"-leader_elect_lease_duration", fleetLeaseDuration.String(),
		"-leader_elect_renew_deadline", fleetRenewDeadline.String(),
		"-leader_elect_retry_period", fleetRetryPeriod.String(),
	)...)
}

// newFleetElecting starts a fleet whose replicas elect their leader with
// the timings in flags, or edl's defaults where flags set none.
func newFleetElecting(t *testing.T, plane *framework.ControlPlane, flags ...string) *fleet {
	t.Helper()
	f := &fleet{t: t, args: append(flags,
		"-kubeconfig", plane.Kubeconfig,
		"-http_addr", "",
		"-autoscale_interval", "1s",
		"-log_level", "info",
	)}
	// Registered after the control plane's cleanup, so it runs before it.
	t.Cleanup(func() {
		runs := f.all()
		for _, r := range runs {
			r.Kill()
		}
		if !t.Failed() {
			return
		}
		// The last runs, and any that ended on its own, explain a failure.
		for i, r := range runs {
			if i >= len(runs)-4 || r.ExitedUnasked() {
				_, err := r.Exited()
				t.Logf("edl run %d of %d (replica %s, identity %s) ended with %v; its last lines:\n%s", i+1, len(runs), r.replica, r.Identity(), err, r.Tail(20))
			}
		}
	})
	return f
}

// start runs a new edl process for replica.
func (f *fleet) start(replica string) *edlRun {
	f.t.Helper()
	e, err := framework.StartEDL(framework.EDLOptions{Args: f.args})
	require.NoError(f.t, err)
	r := &edlRun{EDL: e, replica: replica}
	f.mu.Lock()
	f.runs = append(f.runs, r)
	f.mu.Unlock()
	return r
}

// all returns every run so far.
func (f *fleet) all() []*edlRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*edlRun(nil), f.runs...)
}

// startFleetPlane starts a control plane of the test's own for a fleet: the
// nodes, the CRD, the namespaces paddlecloud (for the lease) and extra, and
// the PriorityClasses "training" (100) for the jobs and "load" (1000) for
// what preempts them. The context it returns ends after timeout.
func startFleetPlane(t *testing.T, nodes framework.NodeSpec, timeout time.Duration, extra ...string) (context.Context, *framework.ControlPlane, tjclient.Interface) {
	t.Helper()
	return startFleetPlaneWith(t, framework.Options{Nodes: []framework.NodeSpec{nodes}}, timeout, extra...)
}

// startFleetPlaneWith is startFleetPlane with the control plane's options.
func startFleetPlaneWith(t *testing.T, opts framework.Options, timeout time.Duration, extra ...string) (context.Context, *framework.ControlPlane, tjclient.Interface) {
	t.Helper()
	plane := framework.StartForTest(t, opts)
	require.NoError(t, applyCRD(plane))
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	tj, err := tjclient.NewForConfig(plane.Config)
	require.NoError(t, err)
	for _, name := range append([]string{leaderLeaseNamespace}, extra...) {
		_, err := plane.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for name, value := range map[string]int32{"training": 100, "load": 1000} {
		_, err := plane.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return ctx, plane, tj
}

// elasticJob is a plain job of 500m trainers, min 1 max 8, and one 100m
// pserver, at the PriorityClass "training".
func elasticJob(ns, name string) *v1.TrainingJob {
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			PriorityClassName: "training",
			Trainer:           v1.TrainerSpec{MinInstance: 1, MaxInstance: 8, Resources: requests("500m", "256Mi")},
			Pserver:           v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: requests("100m", "64Mi")},
		},
	}
}

// waitForReplicaSets waits until the job is Running with a trainer and a
// pserver ReplicaSet that it controls, and returns how long that took.
func waitForReplicaSets(t *testing.T, ctx context.Context, plane *framework.ControlPlane, tj tjclient.Interface, job *v1.TrainingJob) time.Duration {
	t.Helper()
	began := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := tj.PaddlepaddleV1().TrainingJobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, role := range []v1.Role{v1.RoleTrainer, v1.RolePserver} {
			rs, err := plane.Client.AppsV1().ReplicaSets(job.Namespace).Get(ctx, v1.ReplicaSetName(job.Name, role), metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != got.UID {
				last = fmt.Sprintf("ReplicaSet %s is not controlled by job %s (%s)", rs.Name, got.Name, got.UID)
				return false, nil
			}
		}
		last = fmt.Sprintf("phase %q: %s", got.Status.Phase, got.Status.Message)
		return got.Status.Phase == v1.PhaseRunning, nil
	})
	require.NoError(t, err, "job %s never got its ReplicaSets and ran: %s", job.Name, last)
	return time.Since(began)
}
