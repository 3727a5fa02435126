// Command edl is the Elastic Deep Learning controller: it runs PaddlePaddle
// TrainingJobs as ReplicaSets and scales their trainers with the load of the
// cluster. Run it in-cluster (no -kubeconfig) or from a workstation with
// -kubeconfig. `edl explain` plans once on the live cluster, writes nothing,
// and prints why every job has the trainers it has.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	log "github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/controller"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
	tjv1informers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/metrics"
	"github.com/paddlepaddle/edl/pkg/reconnect"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// options are the command-line flags.
type options struct {
	kubeconfig     string
	logLevel       string
	maxLoadDesired float64
	workers        int
	resync         time.Duration
	showVersion    bool

	autoscaleInterval time.Duration
	cooldownCycles    int
	maxGrowPerCycle   int
	rebalanceGap      float64
	dryRun            bool
	gangAdmission     bool
	gpuResources      string

	httpAddr string

	kubeAPIQPS   float64
	kubeAPIBurst int

	leaderElect   bool
	leaderElectNS string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, so that tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "explain" {
		return runExplain(args[1:], stdout, stderr)
	}
	opts, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "edl: %v\n", err)
		return 2
	}
	if opts.showVersion {
		fmt.Fprintf(stdout, "edl %s\n", version)
		return 0
	}
	logger, err := newLogger(opts.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "edl: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, opts, logger); err != nil {
		fmt.Fprintf(stderr, "edl: %v\n", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// parseFlags parses args; every problem is one line naming the flag.
func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("edl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "Usage: edl [flags]\n       edl explain [flags] [-n NAMESPACE] [-o table|json] [JOB]")
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%v (run 'edl -help' for the flags)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (run 'edl -help' for the flags)", fs.Arg(0))
	}
	return o, validate(o)
}

// addFlags defines the controller's flags on fs, into o. edl explain
// defines the same, so that it plans with the options of the controller it
// explains.
func addFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster configuration")
	fs.StringVar(&o.logLevel, "log_level", "info", "log level: debug, info, warn, error or crit")
	fs.Float64Var(&o.maxLoadDesired, "max_load_desired", 0.97, "the autoscaler grows trainers while every resource's requests stay under this share of allocatable (0 < x <= 1)")
	fs.IntVar(&o.workers, "workers", 2, "TrainingJobs synced in parallel")
	fs.DurationVar(&o.resync, "resync", 5*time.Minute, "how often every job is synced even without events (0 disables)")
	fs.DurationVar(&o.autoscaleInterval, "autoscale_interval", 5*time.Second, "time between two autoscaling plans")
	fs.IntVar(&o.cooldownCycles, "cooldown_cycles", 3, "autoscale intervals a job scaled down is not grown again (0 disables)")
	fs.IntVar(&o.maxGrowPerCycle, "max_grow_per_cycle", 0, "most trainers one plan adds to one job (0: no cap)")
	fs.Float64Var(&o.rebalanceGap, "rebalance_gap", autoscaler.DefaultRebalanceGap, "a running job more fulfilled than another of its priority by more than this gives trainers back for it (0 < x <= 1; 1 turns rebalancing off)")
	fs.BoolVar(&o.dryRun, "dry_run", false, "plan and log scaling decisions, patch nothing")
	fs.BoolVar(&o.gangAdmission, "gang_admission", true, "create a new job's pods with the scheduling gate "+v1.SchedulingGateAdmission+" and remove it only once the job's whole minimum fits (off with -dry_run)")
	fs.StringVar(&o.gpuResources, "gpu_resources", string(cluster.DefaultGPUResourceName), "comma-separated extended resources counted as GPUs, in the cluster snapshot and in the trainers' PADDLE_INIT_USE_GPU and PADDLE_INIT_TRAINER_COUNT")
	fs.Float64Var(&o.kubeAPIQPS, "kube_api_qps", 20, "requests per second edl sends the API server, beyond its watches (client-side rate limit)")
	fs.IntVar(&o.kubeAPIBurst, "kube_api_burst", 30, "requests edl may send at once above -kube_api_qps")
	fs.StringVar(&o.httpAddr, "http_addr", ":8080", "address of the HTTP server for /metrics, /healthz and /readyz; empty disables it")
	fs.BoolVar(&o.leaderElect, "leader_elect", true, "run the controller and the autoscaler only while holding the Lease "+leaseName+", so that replicas never write at once")
	fs.StringVar(&o.leaderElectNS, "leader_elect_namespace", "paddlecloud", "namespace of the leader Lease")
	fs.DurationVar(&o.leaseDuration, "leader_elect_lease_duration", 12*time.Second, "how long standby replicas wait after the leader's last renewal before taking over")
	fs.DurationVar(&o.renewDeadline, "leader_elect_renew_deadline", 8*time.Second, "how long the leader keeps retrying to renew before it gives up and exits (less than the lease duration)")
	fs.DurationVar(&o.retryPeriod, "leader_elect_retry_period", time.Second, "time between two attempts to acquire or renew the lease")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.Bool("logtostderr", true, "accepted for compatibility with the original deployment; logs always go to stderr")
}

// validate checks the flags' values; every problem is one line naming the
// flag.
func validate(o options) error {
	if o.workers < 1 {
		return fmt.Errorf("invalid value %d for flag -workers: must be at least 1", o.workers)
	}
	if o.resync < 0 {
		return fmt.Errorf("invalid value %v for flag -resync: must not be negative", o.resync)
	}
	if o.autoscaleInterval <= 0 {
		return fmt.Errorf("invalid value %v for flag -autoscale_interval: must be positive", o.autoscaleInterval)
	}
	if o.cooldownCycles < 0 {
		return fmt.Errorf("invalid value %d for flag -cooldown_cycles: must not be negative", o.cooldownCycles)
	}
	if o.maxGrowPerCycle < 0 || o.maxGrowPerCycle > math.MaxInt32 {
		return fmt.Errorf("invalid value %d for flag -max_grow_per_cycle: must be 0 or positive", o.maxGrowPerCycle)
	}
	if !(o.rebalanceGap > 0 && o.rebalanceGap <= 1) {
		return fmt.Errorf("invalid value %v for flag -rebalance_gap: must be greater than 0 and at most 1", o.rebalanceGap)
	}
	if len(gpuResourceNames(o.gpuResources)) == 0 {
		return fmt.Errorf("invalid value %q for flag -gpu_resources: name at least one resource", o.gpuResources)
	}
	if o.maxLoadDesired <= 0 || o.maxLoadDesired > 1 {
		return fmt.Errorf("invalid value %v for flag -max_load_desired: must be greater than 0 and at most 1", o.maxLoadDesired)
	}
	if !(o.kubeAPIQPS > 0) || math.IsInf(o.kubeAPIQPS, 0) {
		return fmt.Errorf("invalid value %v for flag -kube_api_qps: must be positive", o.kubeAPIQPS)
	}
	if o.kubeAPIBurst < 1 {
		return fmt.Errorf("invalid value %d for flag -kube_api_burst: must be at least 1", o.kubeAPIBurst)
	}
	if o.httpAddr != "" {
		if _, port, err := net.SplitHostPort(o.httpAddr); err != nil || port == "" {
			return fmt.Errorf("invalid value %q for flag -http_addr: must be host:port or :port", o.httpAddr)
		}
	}
	return validateElection(o)
}

// validateElection checks the -leader_elect_* flags the way the elector
// would, but as one line naming the flag.
func validateElection(o options) error {
	if !o.leaderElect {
		return nil
	}
	if errs := validation.IsDNS1123Label(o.leaderElectNS); len(errs) > 0 {
		return fmt.Errorf("invalid value %q for flag -leader_elect_namespace: %s", o.leaderElectNS, errs[0])
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"-leader_elect_lease_duration", o.leaseDuration},
		{"-leader_elect_renew_deadline", o.renewDeadline},
		{"-leader_elect_retry_period", o.retryPeriod},
	} {
		if d.value <= 0 {
			return fmt.Errorf("invalid value %v for flag %s: must be positive", d.value, d.name)
		}
	}
	if o.renewDeadline >= o.leaseDuration {
		return fmt.Errorf("invalid value %v for flag -leader_elect_renew_deadline: must be less than -leader_elect_lease_duration (%v)", o.renewDeadline, o.leaseDuration)
	}
	if float64(o.renewDeadline) <= leaderelection.JitterFactor*float64(o.retryPeriod) {
		return fmt.Errorf("invalid value %v for flag -leader_elect_retry_period: %v times it must be less than -leader_elect_renew_deadline (%v)",
			o.retryPeriod, leaderelection.JitterFactor, o.renewDeadline)
	}
	return nil
}

// newLogger returns a log15 logger writing logfmt lines to w at level and above.
func newLogger(level string, w io.Writer) (log.Logger, error) {
	lvl, err := log.LvlFromString(level)
	if err != nil {
		return nil, fmt.Errorf("invalid value %q for flag -log_level: must be debug, info, warn, error or crit", level)
	}
	logger := log.New()
	logger.SetHandler(log.LvlFilterHandler(lvl, log.StreamHandler(w, log.LogfmtFormat())))
	return logger, nil
}

// restConfig loads the kubeconfig, or the in-cluster configuration when the
// path is empty.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no -kubeconfig given and not running in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("cannot load -kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// clientConfig is restConfig with edl's user agent and the flags' rate limit.
func clientConfig(opts options) (*rest.Config, error) {
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "edl/" + version
	cfg.QPS, cfg.Burst = float32(opts.kubeAPIQPS), opts.kubeAPIBurst
	return cfg, nil
}

// start connects to the API server and runs until ctx is done.
func start(ctx context.Context, opts options, logger log.Logger) error {
	routeKlog(logger)
	cfg, err := clientConfig(opts)
	if err != nil {
		return err
	}
	// Work queues and REST clients find their metrics through process-wide
	// hooks, set before the first queue and the first request.
	m := metrics.New(version)
	workqueue.SetProvider(m.WorkqueueProvider())
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestResult: m})
	// Checked before the transport learns to wait for the server, so that
	// a server that is not there is one line at once.
	if err := checkServer(ctx, cfg); err != nil {
		return err
	}
	reconnect.Configure(cfg, reconnect.DefaultInterval, logger)
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create Kubernetes client: %w", err)
	}
	tjClient, err := tjclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create TrainingJob client: %w", err)
	}
	var leaseClient kubernetes.Interface
	if opts.leaderElect {
		// The Lease has a client and a rate limit of its own, so that a
		// burst of scaling writes never delays a renewal.
		leaseConfig := rest.CopyConfig(cfg)
		leaseConfig.UserAgent += " (leader-election)"
		if leaseClient, err = kubernetes.NewForConfig(leaseConfig); err != nil {
			return fmt.Errorf("create leader-election client: %w", err)
		}
		if err := checkLeaseNamespace(ctx, leaseClient, opts.leaderElectNS); err != nil {
			return err
		}
	}
	logger.Info("connected to the API server", "host", cfg.Host, "version", version)

	h := &health{}
	if opts.leaderElect {
		h.watchdog = leaderelection.NewLeaderHealthzAdaptor(watchdogTimeout)
	}
	if opts.httpAddr != "" {
		stopServer, err := serve(opts.httpAddr, h.handler(m.Handler()), logger)
		if err != nil {
			return err
		}
		defer stopServer()
	}

	w, err := newWatch(opts, kubeClient, tjClient, logger)
	if err != nil {
		return err
	}
	kubeInformers, jobInformers := w.kubeInformers, w.jobInformers

	recorder, stopEvents, err := eventRecorder(kubeClient)
	if err != nil {
		return err
	}
	defer stopEvents()

	ctrl, err := controller.New(controller.Config{
		KubeClient:         kubeClient,
		TJClient:           tjClient,
		JobInformer:        w.jobs,
		ReplicaSetInformer: w.replicaSets,
		ServiceInformer:    kubeInformers.Core().V1().Services(),
		PodInformer:        w.pods,
		Recorder:           recorder,
		Logger:             logger,
		Metrics:            m,
		GPUResources:       w.gpus,
		GangAdmission:      opts.gangAdmission && !opts.dryRun,
	})
	if err != nil {
		return err
	}
	scaler := newScaler(opts, w, kubeClient, tjClient, recorder, logger, m)

	// The informers run whether or not this replica leads, so that a standby
	// takes over with warm caches. They stop after the work, on every path.
	informersCtx, stopInformers := context.WithCancel(context.Background())
	defer func() {
		stopInformers()
		kubeInformers.Shutdown()
		jobInformers.Shutdown()
	}()
	kubeInformers.Start(informersCtx.Done())
	jobInformers.Start(informersCtx.Done())
	go func() {
		if allSynced(kubeInformers.WaitForCacheSync(informersCtx.Done())) &&
			allSynced(jobInformers.WaitForCacheSync(informersCtx.Done())) {
			h.synced.Store(true)
			logger.Debug("informers synced")
		}
	}()

	work := func(ctx context.Context) error {
		errs := make(chan error, 2)
		go func() { errs <- ctrl.Run(ctx, opts.workers) }()
		go func() { errs <- scaler.Run(ctx) }()
		return oneLine(errors.Join(<-errs, <-errs))
	}
	if !opts.leaderElect {
		m.SetLeader(true)
		return work(ctx)
	}
	return runElected(ctx, election{
		client:        leaseClient,
		recorder:      recorder,
		watchdog:      h.watchdog,
		log:           logger,
		setLeader:     m.SetLeader,
		namespace:     opts.leaderElectNS,
		identity:      newIdentity(),
		leaseDuration: opts.leaseDuration,
		renewDeadline: opts.renewDeadline,
		retryPeriod:   opts.retryPeriod,
		lostGrace:     lostLeaseGrace,
	}, work)
}

// watch is what the controller and the autoscaler read the cluster through:
// the informers, with the transforms that keep only the fields EDL reads,
// and the snapshot tracker fed by them.
type watch struct {
	kubeInformers informers.SharedInformerFactory
	jobInformers  tjinformers.SharedInformerFactory
	pods          coreinformers.PodInformer
	jobs          tjv1informers.TrainingJobInformer
	replicaSets   appsinformers.ReplicaSetInformer
	tracker       *cluster.Tracker
	gpus          []corev1.ResourceName
}

// newWatch builds the informers and the tracker; nothing runs until the
// factories are started.
func newWatch(opts options, kubeClient kubernetes.Interface, tjClient tjclient.Interface, logger log.Logger) (*watch, error) {
	w := &watch{
		kubeInformers: informers.NewSharedInformerFactory(kubeClient, opts.resync),
		jobInformers:  tjinformers.NewSharedInformerFactory(tjClient, opts.resync),
		gpus:          gpuResourceNames(opts.gpuResources),
	}
	w.pods = w.kubeInformers.Core().V1().Pods()
	nodeInformer := w.kubeInformers.Core().V1().Nodes()
	if err := setTransforms(w.kubeInformers); err != nil {
		return nil, err
	}
	w.jobs = w.jobInformers.Paddlepaddle().V1().TrainingJobs()
	w.replicaSets = w.kubeInformers.Apps().V1().ReplicaSets()
	var err error
	w.tracker, err = cluster.New(cluster.Config{
		PodInformer:      w.pods,
		NodeInformer:     nodeInformer,
		QuotaInformer:    w.kubeInformers.Core().V1().ResourceQuotas(),
		Logger:           logger,
		GPUResourceNames: w.gpus,
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// newScaler is the autoscaler with the options of the flags: the one the
// controller runs and the one edl explain plans with.
func newScaler(opts options, w *watch, kubeClient kubernetes.Interface, tjClient tjclient.Interface,
	recorder record.EventRecorder, logger log.Logger, m autoscaler.Metrics) *autoscaler.Autoscaler {
	return autoscaler.New(autoscaler.Config{
		KubeClient:            kubeClient,
		TJClient:              tjClient,
		Tracker:               w.tracker,
		JobInformer:           w.jobs,
		ReplicaSetInformer:    w.replicaSets,
		PriorityClassInformer: w.kubeInformers.Scheduling().V1().PriorityClasses(),
		Recorder:              recorder,
		Logger:                logger,
		Clock:                 clock.RealClock{},
		Interval:              opts.autoscaleInterval,
		MaxLoadDesired:        opts.maxLoadDesired,
		CoolDown:              time.Duration(opts.cooldownCycles) * opts.autoscaleInterval,
		MaxGrowPerCycle:       int32(opts.maxGrowPerCycle), // #nosec G115 -- validate keeps it within [0, MaxInt32]
		RebalanceGap:          opts.rebalanceGap,
		DryRun:                opts.dryRun,
		GangAdmission:         opts.gangAdmission && !opts.dryRun,
		Metrics:               m,
	})
}

// oneLine keeps an error to the one line the user sees: errors.Join puts
// each error on a line of its own.
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
}

func allSynced[K comparable](synced map[K]bool) bool {
	for _, ok := range synced {
		if !ok {
			return false
		}
	}
	return true
}

// gpuResourceNames splits the -gpu_resources flag.
func gpuResourceNames(flagValue string) []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, n := range strings.Split(flagValue, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, corev1.ResourceName(n))
		}
	}
	return names
}

// eventRecorder records events as the component "edl-controller". The
// returned func flushes and stops the broadcaster.
func eventRecorder(kubeClient kubernetes.Interface) (record.EventRecorder, func(), error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "edl-controller"})
	return recorder, broadcaster.Shutdown, nil
}

// checkServer fails fast, with one line, when the API server cannot be
// reached or does not serve TrainingJobs, instead of letting informers retry
// forever in silence.
func checkServer(ctx context.Context, cfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create Kubernetes client: %w", err)
	}
	host := cfg.Host
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return fmt.Errorf("cannot reach the API server at %s: %w", host, err)
	}
	_, err = client.Discovery().ServerResourcesForGroupVersion(v1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the API server at %s does not serve %s TrainingJobs: install the CRD with 'kubectl create -f thirdpartyresource.yaml'", host, v1.SchemeGroupVersion)
	}
	if err != nil {
		return fmt.Errorf("discover %s on the API server at %s: %w", v1.SchemeGroupVersion, host, err)
	}
	return nil
}

// setTransforms installs the informer transforms before the informers
// start: the informers watch every pod, node, ReplicaSet and Service of the
// cluster, and keep only the fields the controller, the tracker and the
// autoscaler read, so that a cluster of 100,000 pods stays cheap.
func setTransforms(f informers.SharedInformerFactory) error {
	for _, t := range []struct {
		what     string
		informer interface {
			SetTransform(cache.TransformFunc) error
		}
		transform cache.TransformFunc
	}{
		{"pod", f.Core().V1().Pods().Informer(), cluster.TransformPod},
		{"node", f.Core().V1().Nodes().Informer(), cluster.TransformNode},
		{"ReplicaSet", f.Apps().V1().ReplicaSets().Informer(), cluster.TransformReplicaSet},
		{"Service", f.Core().V1().Services().Informer(), cluster.TransformService},
	} {
		if err := t.informer.SetTransform(t.transform); err != nil {
			return fmt.Errorf("set the %s transform: %w", t.what, err)
		}
	}
	return nil
}
