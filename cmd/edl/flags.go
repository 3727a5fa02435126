package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	log "github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/config"
)

// options are the command-line flags, with the config file's values for
// the flags the command line does not give.
type options struct {
	kubeconfig     string
	configFile     string
	logLevel       string
	maxLoadDesired float64
	workers        int
	resync         time.Duration
	showVersion    bool

	autoscaleInterval time.Duration
	cooldownCycles    int
	maxGrowPerCycle   int
	rebalanceGap      float64
	maxMovesPerSecond float64
	policy            string
	priceResizes      bool
	dryRun            bool
	gangAdmission     bool
	preemption        bool
	startDeadline     time.Duration
	startRetries      int
	gpuResources      string

	httpAddr      string
	secureMetrics bool

	kubeAPIQPS   float64
	kubeAPIBurst int

	leaderElect   bool
	leaderElectNS string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration

	// given are the options the config file and the command line set;
	// effective are all of them, as validated.
	given, effective *config.EDLConfiguration
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
	return o, applyConfig(fs, &o, validate)
}

// applyConfig sets the flags the command line did not give from the config
// file, if one is named, and validates the result with check; a value of
// the file that check refuses is one line naming the file and the field.
// It then records what was given and the effective configuration.
func applyConfig(fs *flag.FlagSet, o *options, check func(options) error) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	fromFile := map[string]string{}
	if o.configFile != "" {
		file, err := config.Load(o.configFile)
		if err != nil {
			return err
		}
		for _, f := range config.Fields {
			v, ok := f.Get(file)
			if !ok || onCommandLine[f.Flag] {
				continue
			}
			if err := fs.Set(f.Flag, v); err != nil {
				return fmt.Errorf("config file %s: invalid value %q for %s: %v", o.configFile, v, f.Path, err)
			}
			fromFile[f.Flag] = f.Path
		}
	}
	if err := check(*o); err != nil {
		if m := flagOfError.FindStringSubmatch(err.Error()); m != nil && fromFile[m[1]] != "" {
			return fmt.Errorf("config file %s: %s", o.configFile,
				strings.Replace(err.Error(), "for flag -"+m[1], "for "+fromFile[m[1]], 1))
		}
		return err
	}
	o.given = &config.EDLConfiguration{}
	o.effective = config.Default()
	for _, f := range config.Fields {
		v := fs.Lookup(f.Flag).Value.String()
		_ = f.Set(o.effective, v) // the flag parsed it already
		if onCommandLine[f.Flag] || fromFile[f.Flag] != "" {
			_ = f.Set(o.given, v)
		}
	}
	return nil
}

// flagOfError finds the flag a validation error is about: every one starts
// "invalid value V for flag -NAME:".
var flagOfError = regexp.MustCompile(`^invalid value .* for flag -(\w+):`)

// addFlags defines the controller's flags on fs, into o. edl explain
// defines the same, so that it plans with the options of the controller it
// explains.
func addFlags(fs *flag.FlagSet, o *options) {
	d := config.Default()
	a, le := d.Autoscaler, d.LeaderElection
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster configuration")
	fs.StringVar(&o.configFile, "config", "", "path to an EDLConfiguration file ("+config.APIVersion+"); the flags given on the command line override its fields")
	fs.StringVar(&o.logLevel, "log_level", *d.LogLevel, "log level: debug, info, warn, error or crit")
	fs.Float64Var(&o.maxLoadDesired, "max_load_desired", *a.MaxLoadDesired, "the autoscaler grows trainers while every resource's requests stay under this share of allocatable in the job's pool, and takes trainers back above it (0 < x <= 1)")
	fs.IntVar(&o.workers, "workers", *d.Workers, "TrainingJobs synced in parallel")
	fs.DurationVar(&o.resync, "resync", d.Resync.Duration, "how often every job is synced even without events (0 disables)")
	fs.DurationVar(&o.autoscaleInterval, "autoscale_interval", a.Interval.Duration, "time between two autoscaling plans")
	fs.IntVar(&o.cooldownCycles, "cooldown_cycles", *a.CooldownCycles, "autoscale intervals a job scaled down is not grown again (0 disables)")
	fs.IntVar(&o.maxGrowPerCycle, "max_grow_per_cycle", *a.MaxGrowPerCycle, "most trainers one plan adds to one job (0: no cap)")
	fs.Float64Var(&o.rebalanceGap, "rebalance_gap", *a.RebalanceGap, "a running job more fulfilled than another of its priority by more than this gives trainers back for it (0 < x <= 1; 1 turns rebalancing off)")
	fs.Float64Var(&o.maxMovesPerSecond, "max_moves_per_second", *a.MaxMovesPerSecond, "most trainers rebalancing and reclaim move per second: a plan moves this many per second since the plan before, at most an interval's, rebalancing alone half of it; a move is a pod kube-controller-manager deletes and one it creates, so raise it with kube-controller-manager's --kube-api-qps (x > 0)")
	fs.StringVar(&o.policy, "policy", *a.Policy, "how jobs of one priority share idle room and what rebalancing moves: goodput (each trainer to the job its progress reports say it speeds up most; a job that reports nothing is taken to scale linearly) or fulfillment (each to the least fulfilled job)")
	fs.BoolVar(&o.priceResizes, "price_resizes", *a.PriceResizes, "price the resizes of jobs whose trainers all restart on one (PyTorch, Horovod): grow them in one step and resize each at most once per cool-down derived from its measured resize cost; false scales them like any job")
	fs.BoolVar(&o.dryRun, "dry_run", *a.DryRun, "plan and log scaling decisions, patch nothing")
	fs.BoolVar(&o.gangAdmission, "gang_admission", *a.GangAdmission, "hold a new job's ReplicaSets at 0 replicas, their templates gated with "+v1.SchedulingGateAdmission+", until the job's whole minimum fits its namespace's quota and the nodes (off with -dry_run)")
	fs.BoolVar(&o.preemption, "preemption", *a.Preemption, "with -gang_admission, a queued job that does not fit even with every job of a lower priority at its minimum stops whole the fewest running jobs of a lower priority, which wait in the queue to start again")
	fs.DurationVar(&o.startDeadline, "start_deadline", a.StartDeadline.Duration, "with -gang_admission, an admitted job whose minimum is not all running this long after its admission goes back to the queue, its room and quota released (0 waits for ever)")
	fs.IntVar(&o.startRetries, "start_retries", *a.StartRetries, "times a job that did not start within -start_deadline is admitted again, after a backoff that doubles from a minute; after the last it stays queued until suspended and resumed")
	fs.StringVar(&o.gpuResources, "gpu_resources", strings.Join(d.GPUResources, ","), "comma-separated extended resources counted as GPUs, in the cluster snapshot and in the trainers' PADDLE_INIT_USE_GPU and PADDLE_INIT_TRAINER_COUNT")
	fs.Float64Var(&o.kubeAPIQPS, "kube_api_qps", *d.KubeAPIQPS, "requests per second edl sends the API server, beyond its watches (the client-side rate limit of each of its clients: core and apps APIs, TrainingJobs, events, the leader-election Lease)")
	fs.IntVar(&o.kubeAPIBurst, "kube_api_burst", *d.KubeAPIBurst, "requests edl may send at once above -kube_api_qps")
	fs.StringVar(&o.httpAddr, "http_addr", *d.HTTPAddr, "address of the HTTP server for /metrics, /healthz and /readyz; empty disables it")
	fs.BoolVar(&o.secureMetrics, "secure_metrics", *d.SecureMetrics, "serve -http_addr over TLS with a self-signed certificate, and /metrics only to a bearer token the API server authenticates (TokenReview) and authorizes to get /metrics (SubjectAccessReview)")
	fs.BoolVar(&o.leaderElect, "leader_elect", *le.LeaderElect, "run the controller and the autoscaler only while holding the Lease "+leaseName+", so that replicas never write at once")
	fs.StringVar(&o.leaderElectNS, "leader_elect_namespace", leaseNamespace(*le.ResourceNamespace, os.Getenv(podNamespaceEnv)),
		"namespace of the leader Lease (default: $"+podNamespaceEnv+", the pod's own namespace in the cluster, else "+*le.ResourceNamespace+")")
	fs.DurationVar(&o.leaseDuration, "leader_elect_lease_duration", le.LeaseDuration.Duration, "how long standby replicas wait after the leader's last renewal before taking over")
	fs.DurationVar(&o.renewDeadline, "leader_elect_renew_deadline", le.RenewDeadline.Duration, "how long the leader keeps retrying to renew before it gives up and exits (less than the lease duration)")
	fs.DurationVar(&o.retryPeriod, "leader_elect_retry_period", le.RetryPeriod.Duration, "time between two attempts to acquire or renew the lease")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.Bool("logtostderr", true, "accepted for compatibility with the original deployment; logs always go to stderr")
}

// podNamespaceEnv is the variable edl_controller.yaml sets to the pod's own
// namespace through the downward API, so that the Lease moves with the
// install: an overlay that puts the controller into another namespace
// needs no change of its configuration.
const podNamespaceEnv = "POD_NAMESPACE"

// leaseNamespace is the default of -leader_elect_namespace: the pod's
// namespace when edl runs in one, else the configuration's default.
func leaseNamespace(configDefault, podNamespace string) string {
	if podNamespace != "" {
		return podNamespace
	}
	return configDefault
}

// validate checks the flags' values; every problem is one line naming the
// flag.
func validate(o options) error {
	if _, err := log.LvlFromString(o.logLevel); err != nil {
		return fmt.Errorf("invalid value %q for flag -log_level: must be debug, info, warn, error or crit", o.logLevel)
	}
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
	if o.startDeadline < 0 {
		return fmt.Errorf("invalid value %v for flag -start_deadline: must not be negative", o.startDeadline)
	}
	if o.startRetries < 0 {
		return fmt.Errorf("invalid value %d for flag -start_retries: must not be negative", o.startRetries)
	}
	if !(o.rebalanceGap > 0 && o.rebalanceGap <= 1) {
		return fmt.Errorf("invalid value %v for flag -rebalance_gap: must be greater than 0 and at most 1", o.rebalanceGap)
	}
	if o.policy != string(planner.PolicyGoodput) && o.policy != string(planner.PolicyFulfillment) {
		return fmt.Errorf("invalid value %q for flag -policy: must be goodput or fulfillment", o.policy)
	}
	if !(o.maxMovesPerSecond > 0) || math.IsInf(o.maxMovesPerSecond, 1) {
		return fmt.Errorf("invalid value %v for flag -max_moves_per_second: must be a positive number", o.maxMovesPerSecond)
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
