// Command demo shows EDL at work on the standing local cluster (make
// cluster-up): it installs the CRD, starts the edl binary out of cluster with
// the cluster's kubeconfig (detached; DIR/edl.pid, DIR/edl.log), submits
// example/examplejob.yaml and two more elastic jobs, drives a short wave of
// higher-priority web pods, and prints a table of the jobs every autoscale
// interval. It leaves the cluster and edl running; hack/cluster.sh down
// (make cluster-down) stops both. make demo runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/experiment"
	"github.com/paddlepaddle/edl/test/framework"
)

// The demo's jobs beside example/examplejob.yaml: trainers of 1 CPU, one
// pserver each, elastic between min and max.
var demoJobs = []struct {
	name     string
	min, max int32
}{
	{"resnet", 2, 8},
	{"ctr", 1, 6},
}

// webSteps are the replicas of the higher-priority web Deployment, each held
// for one step: up, higher, down, gone.
var webSteps = []int32{3, 6, 3, 0}

var (
	demoTrainer = experiment.PodSize{CPU: "1", Memory: "1Gi"}
	demoPserver = experiment.PodSize{CPU: "500m", Memory: "512Mi"}
	demoWeb     = experiment.PodSize{CPU: "1", Memory: "256Mi"}
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	dir      string
	edl      string
	interval time.Duration
	growth   time.Duration
	step     time.Duration
	settle   time.Duration
	check    bool
	real     bool
}

func run() error {
	var o options
	flag.StringVar(&o.dir, "dir", defaultDir(), "the local cluster's directory (hack/cluster.sh): kubeconfig, edl.pid, edl.log")
	flag.StringVar(&o.edl, "edl", "bin/edl", "the edl binary (make build)")
	flag.DurationVar(&o.interval, "interval", 2*time.Second, "edl's -autoscale_interval, and how often the table is printed")
	flag.DurationVar(&o.growth, "growth", 20*time.Second, "how long the jobs grow before the web wave")
	flag.DurationVar(&o.step, "step", 16*time.Second, "how long each level of the web wave lasts")
	flag.DurationVar(&o.settle, "settle", 20*time.Second, "how long the jobs grow back after the wave")
	flag.BoolVar(&o.check, "check", false, "asserted mode (make test): exit 1 when the summary's figures are outside the bounds of a working EDL")
	flag.BoolVar(&o.real, "real-node", false, "the cluster has a real node (make demo REAL_NODES=1): the kwok jobs and web pods tolerate kwok's taint, and one more job, "+realJob+", runs its pods as processes on "+framework.RealNodeName)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	kubeconfig := filepath.Join(o.dir, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		return fmt.Errorf("no local cluster: %w (start one with make cluster-up)", err)
	}
	binDir, err := framework.BinDir()
	if err != nil {
		return err
	}
	kubectl := filepath.Join(binDir, "kubectl")
	root, err := framework.ModuleRoot()
	if err != nil {
		return err
	}
	edlBin, err := filepath.Abs(o.edl)
	if err != nil {
		return err
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg = experiment.ClientConfig(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tj, err := tjclient.NewForConfig(cfg)
	if err != nil {
		return err
	}

	step := func(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }
	sh := func(args ...string) error {
		fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}

	step("installing the TrainingJob CRD and the PriorityClasses %q (%d) and %q (%d)",
		experiment.TrainingPriority, experiment.TrainingPriorityValue, experiment.WebPriority, experiment.WebPriorityValue)
	if err := sh("apply", "--server-side", "-f", filepath.Join(root, "thirdpartyresource.yaml")); err != nil {
		return err
	}
	// kubectl wait fails at once, rather than waiting, while the new CRD has
	// no status conditions yet; try again for a while.
	for try := 1; ; try++ {
		err := sh("wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.paddlepaddle.org")
		if err == nil {
			break
		}
		if try == 10 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if err := experiment.Install(ctx, kube, "default"); err != nil {
		return err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s for edl's Lease: %w", leaseNamespace, err)
	}

	edl, err := startEDL(edlBin, kubeconfig, o)
	if err != nil {
		return err
	}
	step("edl runs out of cluster (pid %d, autoscale interval %s, leading with the Lease %s/edl-controller, where kubectl edl explain reads its options), logging to %s",
		edl.Pid(), o.interval, leaseNamespace, filepath.Join(o.dir, "edl.log"))

	rec, err := experiment.NewRecorder(cfg, "default")
	if err != nil {
		return err
	}
	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	if err := rec.Start(recCtx); err != nil {
		return err
	}
	// The informers end with recCtx; Shutdown waits for them.
	defer func() { stopRec(); rec.Shutdown() }()

	step("submitting example/examplejob.yaml and two more elastic jobs")
	if !o.real {
		if err := sh("create", "-f", filepath.Join(root, "example", "examplejob.yaml")); err != nil {
			return err
		}
	} else if err := createTolerating(ctx, tj, filepath.Join(root, "example", "examplejob.yaml")); err != nil {
		return err
	}
	rec.Submitted("example", time.Now())
	for _, j := range demoJobs {
		job := experiment.NewJob(j.name, "default", j.min, j.max, 1, demoTrainer, demoPserver)
		// The example has no priority class; the demo's jobs share its
		// priority, so that the autoscaler chooses among them by fulfillment.
		job.Spec.PriorityClassName = ""
		if o.real {
			onKwok(job)
		}
		if _, err := tj.PaddlepaddleV1().TrainingJobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("submit %s: %w", j.name, err)
		}
		rec.Submitted(j.name, time.Now())
		fmt.Printf("trainingjob.paddlepaddle.org/%s created (trainers %s CPU, %d..%d; one pserver of %s CPU)\n",
			j.name, demoTrainer.CPU, j.min, j.max, demoPserver.CPU)
	}
	web := experiment.WebDeployment("default", 0, demoWeb)
	real := map[string]bool{}
	if o.real {
		web.Spec.Template.Spec.Tolerations = append(web.Spec.Template.Spec.Tolerations, kwokToleration)
		web.Spec.Template.Spec.Affinity = offRealNode
		if err := submitReal(ctx, tj, root); err != nil {
			return err
		}
		rec.Submitted(realJob, time.Now())
		real[realJob] = true
	}
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the web Deployment: %w", err)
	}

	var samples []experiment.Sample
	show := func(until time.Time, what string) error {
		for {
			s := rec.Sample(time.Now())
			samples = append(samples, s)
			printTable(os.Stdout, s, what, real)
			if !time.Now().Add(o.interval / 2).Before(until) {
				return nil
			}
			if exited, err := edl.Exited(); exited {
				return fmt.Errorf("edl exited (%v); end of %s:\n%s", err, filepath.Join(o.dir, "edl.log"), edl.Tail(20))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(o.interval):
			}
		}
	}
	step("the jobs start at their minimum and grow into the idle capacity (%s)", o.growth)
	if err := show(time.Now().Add(o.growth), "growing"); err != nil {
		return err
	}
	for _, n := range webSteps {
		step("web service (priority %d, %s CPU per pod) to %d pods", experiment.WebPriorityValue, demoWeb.CPU, n)
		if err := experiment.ScaleWeb(ctx, kube, "default", n); err != nil {
			return err
		}
		rec.SetWebDesired(int(n))
		if err := show(time.Now().Add(o.step), fmt.Sprintf("web %d", n)); err != nil {
			return err
		}
	}
	step("the web service is gone; the jobs grow back (%s)", o.settle)
	if err := show(time.Now().Add(o.settle), "growing back"); err != nil {
		return err
	}

	res := summarize(samples, rec.JobTimings(), rec.WebWaits())
	summary(os.Stdout, res)
	if err := sh("get", "tj"); err != nil {
		return err
	}
	if o.check {
		// kubectl edl explain, as a user would run it, plans with the
		// options of the edl that leads, not the defaults.
		text, err := exec.CommandContext(ctx, edlBin, "explain", "-kubeconfig", kubeconfig, "-n", "default", "example").CombinedOutput() // #nosec G204 -- the edl under test
		if err != nil || strings.Contains(string(text), "no Lease") {
			return fmt.Errorf("edl explain (%v) does not read the leader's options:\n%s", err, text)
		}
		if err := check(res, len(demoJobs)+1+len(real)); err != nil {
			return fmt.Errorf("the demo's figures are out of bounds:\n%w", err)
		}
		step("the figures are within the bounds of a working EDL")
		return nil
	}
	fmt.Printf(`
The cluster and edl keep running.
  kubeconfig: %s
  edl:        pid %d, log %s
Go on with:
  %s --kubeconfig %s get tj
  %s --kubeconfig %s describe tj resnet
Stop everything with:
  %smake cluster-down
`, kubeconfig, edl.Pid(), filepath.Join(o.dir, "edl.log"), kubectl, kubeconfig, kubectl, kubeconfig, dirEnv(o.dir))
	return nil
}

// startEDL starts edl detached from this process (its own session), so it
// outlives the demo, and writes its pid to DIR/edl.pid for hack/cluster.sh down.
func startEDL(bin, kubeconfig string, o options) (*framework.EDL, error) {
	pidFile := filepath.Join(o.dir, "edl.pid")
	if data, err := os.ReadFile(pidFile); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && alive(p) {
			return nil, fmt.Errorf("edl already runs (pid %d, %s); stop it with make cluster-down", p, pidFile)
		}
	}
	edl, err := framework.StartEDL(framework.EDLOptions{Binary: bin, Args: productionArgs(experiment.EDLArgs(kubeconfig, o.interval, experiment.On)),
		LogPath: filepath.Join(o.dir, "edl.log"), Detach: true})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(edl.Pid())+"\n"), 0o644); err != nil {
		return nil, err
	}
	if exited, err := edl.Wait(experiment.EDLStartup); exited {
		_ = os.Remove(pidFile)
		return nil, fmt.Errorf("edl exited at once (%v); end of %s:\n%s", err, filepath.Join(o.dir, "edl.log"), edl.Tail(20))
	}
	return edl, nil
}

// leaseNamespace is where the demo's edl holds its Lease, as the Deployment
// of edl_controller.yaml does.
const leaseNamespace = "paddlecloud"

// productionArgs turns the experiments' edl arguments into production's:
// leader election on, the Lease in paddlecloud, where edl publishes its
// options, so that kubectl edl explain plans with the demo's interval
// rather than warning that no Lease is held and planning with the defaults.
func productionArgs(args []string) []string {
	out := make([]string, 0, len(args)+3)
	for _, a := range args {
		if a != "-leader_elect=false" {
			out = append(out, a)
		}
	}
	return append(out, "-leader_elect=true", "-leader_elect_namespace", leaseNamespace)
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name in parentheses; Z is a zombie.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func defaultDir() string {
	if d := os.Getenv("EDL_CLUSTER_DIR"); d != "" {
		return d
	}
	return standardDir()
}

// dirEnv is what a make command needs in front to reach the cluster in dir:
// nothing for the standard directory.
func dirEnv(dir string) string {
	if filepath.Clean(dir) == filepath.Clean(standardDir()) {
		return ""
	}
	return "EDL_CLUSTER_DIR=" + dir + " "
}

// standardDir is hack/cluster.sh's directory when EDL_CLUSTER_DIR is unset.
func standardDir() string { return filepath.Join(framework.CacheDir(), "cluster") }
