// Command edl is the Elastic Deep Learning controller: it runs PaddlePaddle
// TrainingJobs as ReplicaSets and scales their trainers with the load of the
// cluster. Run it in-cluster (no -kubeconfig) or from a workstation with
// -kubeconfig. `edl explain` plans once on the live cluster, writes nothing,
// and prints why every job has the trainers it has.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	log "github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/config"
	"github.com/paddlepaddle/edl/pkg/controller"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/pkg/metrics"
	"github.com/paddlepaddle/edl/pkg/reconnect"
	"github.com/paddlepaddle/edl/pkg/watch"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	logger.Info("effective configuration", append([]any{"file", opts.configFile}, config.KeyValues(opts.effective)...)...)
	m.SetOptions(opts.autoscaleInterval, opts.maxLoadDesired)

	h := &health{}
	if opts.leaderElect {
		h.watchdog = leaderelection.NewLeaderHealthzAdaptor(watchdogTimeout)
	}
	if opts.httpAddr != "" {
		metrics, tlsConfig := m.Handler(), (*tls.Config)(nil)
		if opts.secureMetrics {
			host, _ := os.Hostname()
			if tlsConfig, err = selfSignedTLS(host, time.Now()); err != nil {
				return err
			}
			metrics = newMetricsAuth(kubeClient, logger).wrap(metrics)
		}
		stopServer, err := serve(opts.httpAddr, h.handler(metrics), tlsConfig, logger)
		if err != nil {
			return err
		}
		defer stopServer()
	}

	w, err := watch.New(kubeClient, tjClient, opts.resync, opts.effective.GPUResources, logger)
	if err != nil {
		return err
	}
	kubeInformers, jobInformers := w.KubeInformers, w.JobInformers

	// Events have a client and a rate limit of their own, as
	// kube-scheduler's do: a yield that scales a hundred jobs records an
	// event for each, and they must not delay the scalings' own writes.
	eventClient, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("create event client: %w", err)
	}
	recorder, stopEvents, err := eventRecorder(eventClient)
	if err != nil {
		return err
	}
	defer stopEvents()

	planner := opts.effective.Planner()
	ctrl, err := controller.New(controller.Config{
		KubeClient:         kubeClient,
		TJClient:           tjClient,
		JobInformer:        w.Jobs,
		ReplicaSetInformer: w.ReplicaSets,
		ServiceInformer:    kubeInformers.Core().V1().Services(),
		PodInformer:        w.Pods,
		ConfigMapInformer:  w.ConfigMaps,
		PDBInformer:        w.PDBs,
		Recorder:           recorder,
		Logger:             logger,
		Metrics:            m,
		GPUResources:       w.GPUs,
		GangAdmission:      opts.gangAdmission && !opts.dryRun,
		StatusInterval:     planner.Interval,
	})
	if err != nil {
		return err
	}
	scaler := w.Autoscaler(planner, kubeClient, tjClient, recorder, logger, m)

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
	identity := newIdentity()
	return runElected(ctx, election{
		publish: func(ctx context.Context) error {
			return config.Publish(ctx, leaseClient.CoordinationV1(), opts.leaderElectNS, identity, version, opts.effective)
		},
		client:        leaseClient,
		recorder:      recorder,
		watchdog:      h.watchdog,
		log:           logger,
		setLeader:     m.SetLeader,
		namespace:     opts.leaderElectNS,
		identity:      identity,
		leaseDuration: opts.leaseDuration,
		renewDeadline: opts.renewDeadline,
		retryPeriod:   opts.retryPeriod,
		lostGrace:     lostLeaseGrace,
	}, work)
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
