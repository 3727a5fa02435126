package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, Version and Kind of the configuration file.
const (
	Group      = "edl.paddlepaddle.org"
	Version    = "v1alpha1"
	Kind       = "EDLConfiguration"
	APIVersion = Group + "/" + Version
)

// EDLConfiguration is edl's configuration. A field left out keeps the
// default (or the flag's value); Default returns every field filled in.
type EDLConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// LogLevel is debug, info, warn, error or crit.
	LogLevel *string `json:"logLevel,omitempty"`
	// Workers is how many TrainingJobs are synced in parallel.
	Workers *int `json:"workers,omitempty"`
	// Resync is how often every job is synced even without events; 0
	// disables it.
	Resync *metav1.Duration `json:"resync,omitempty"`
	// GPUResources are the extended resources counted as GPUs.
	GPUResources []string `json:"gpuResources,omitempty"`
	// HTTPAddr is the address of /metrics, /healthz and /readyz; "" turns
	// the server off.
	HTTPAddr *string `json:"httpAddr,omitempty"`
	// SecureMetrics serves the HTTP server over TLS and /metrics only to
	// clients the API server authenticates and authorizes (get on the
	// non-resource URL /metrics).
	SecureMetrics *bool `json:"secureMetrics,omitempty"`
	// KubeAPIQPS and KubeAPIBurst are the client-side rate limit of each of
	// edl's clients of the API server (core and apps APIs, TrainingJobs,
	// events, the leader-election Lease).
	KubeAPIQPS   *float64 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst *int     `json:"kubeAPIBurst,omitempty"`

	Autoscaler     AutoscalerConfiguration     `json:"autoscaler"`
	LeaderElection LeaderElectionConfiguration `json:"leaderElection"`
}

// AutoscalerConfiguration are the planner's options
// (docs/autoscaler.md).
type AutoscalerConfiguration struct {
	// Interval is the time between two plans.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// MaxLoadDesired is the load target: the share of allocatable that
	// requests may reach (0 < x <= 1).
	MaxLoadDesired *float64 `json:"maxLoadDesired,omitempty"`
	// CooldownCycles is how many intervals a job scaled down is not grown
	// again.
	CooldownCycles *int `json:"cooldownCycles,omitempty"`
	// MaxGrowPerCycle caps the trainers one plan adds to one job; 0: no cap.
	MaxGrowPerCycle *int `json:"maxGrowPerCycle,omitempty"`
	// RebalanceGap is the fulfillment gap between jobs of a priority above
	// which the more fulfilled gives trainers back (0 < x <= 1; 1 is off).
	RebalanceGap *float64 `json:"rebalanceGap,omitempty"`
	// MaxMovesPerSecond caps the trainers rebalancing and reclaim move per
	// second: a plan moves this many per second since the plan before, at
	// most an interval's, rebalancing alone half of it. A move is one pod
	// kube-controller-manager deletes and one it creates (x > 0).
	MaxMovesPerSecond *float64 `json:"maxMovesPerSecond,omitempty"`
	// Policy is how jobs of one priority share what is idle and what
	// rebalancing moves: goodput (the trainer goes to the job its progress
	// reports say it speeds up most) or fulfillment (to the least
	// fulfilled job).
	Policy *string `json:"policy,omitempty"`
	// PriceResizes prices the resizes of jobs whose trainers all restart
	// on a resize (PyTorch, Horovod): grown in one step, resized at most
	// once per cool-down derived from the measured cost. Off, they are
	// scaled like any job, as before resizes had a price.
	PriceResizes *bool `json:"priceResizes,omitempty"`
	// DryRun plans and logs, and changes nothing.
	DryRun *bool `json:"dryRun,omitempty"`
	// GangAdmission queues a new job until its whole minimum fits.
	GangAdmission *bool `json:"gangAdmission,omitempty"`
	// Preemption lets a queued job that does not fit even with every job
	// of a lower priority at its minimum stop whole the fewest running jobs
	// of a lower priority; it needs GangAdmission, which requeues them.
	Preemption *bool `json:"preemption,omitempty"`
	// StartDeadline is how long an admitted job's minimum may take to be
	// all running before the job goes back to the queue, its room and quota
	// released; 0 waits for ever.
	StartDeadline *metav1.Duration `json:"startDeadline,omitempty"`
	// StartRetries is how many times a job that did not start is tried
	// again, after a backoff that doubles from a minute; after the last it
	// stays queued until it is suspended and resumed.
	StartRetries *int `json:"startRetries,omitempty"`
}

// LeaderElectionConfiguration is the Lease the replicas compete for.
type LeaderElectionConfiguration struct {
	LeaderElect       *bool            `json:"leaderElect,omitempty"`
	ResourceNamespace *string          `json:"resourceNamespace,omitempty"`
	LeaseDuration     *metav1.Duration `json:"leaseDuration,omitempty"`
	RenewDeadline     *metav1.Duration `json:"renewDeadline,omitempty"`
	RetryPeriod       *metav1.Duration `json:"retryPeriod,omitempty"`
}

// DefaultPolicy is the default of autoscaler.policy: goodput, which on the
// Pollux trace is level with an oracle's and treats a job that reports no
// progress as fulfillment does (docs/experiments-trace.md).
const DefaultPolicy = "goodput"

// DefaultRebalanceGap is the default of autoscaler.rebalanceGap; it equals
// autoscaler.DefaultRebalanceGap, which a test checks.
const DefaultRebalanceGap = 0.1

// DefaultMaxMovesPerSecond is the default of autoscaler.maxMovesPerSecond:
// kube-controller-manager's ReplicaSet controller sends about 20 requests
// a second at its default client QPS, and a move is two of them, so the
// moves of one plan are done before the next; rebalancing makes half of
// them at most and leaves the rest of the rate to the pods of jobs
// starting. It equals
// planner.DefaultMovesPerSecond, which a test checks.
const DefaultMaxMovesPerSecond = 10.0

// DefaultStartDeadline is the default of autoscaler.startDeadline: a cold
// pull of a training image of several GB takes minutes, and twice
// Kueue's default waitForPodsReady timeout leaves room for it, while a job
// that cannot start (a volume that does not exist, a quota or an admission
// policy EDL does not see) gives its room back within minutes, not never.
const DefaultStartDeadline = 10 * time.Minute

// DefaultGPUResource is the default of gpuResources.
const DefaultGPUResource = "nvidia.com/gpu"

// Default returns the configuration of an edl started without a file or
// flags: every field set. edl's flags take their defaults from it.
func Default() *EDLConfiguration {
	return &EDLConfiguration{
		TypeMeta:      metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		LogLevel:      ptr("info"),
		Workers:       ptr(2),
		Resync:        duration(5 * time.Minute),
		GPUResources:  []string{DefaultGPUResource},
		HTTPAddr:      ptr(":8080"),
		SecureMetrics: ptr(false),
		KubeAPIQPS:    ptr(100.0),
		KubeAPIBurst:  ptr(200),
		Autoscaler: AutoscalerConfiguration{
			Interval:          duration(5 * time.Second),
			MaxLoadDesired:    ptr(0.97),
			CooldownCycles:    ptr(3),
			MaxGrowPerCycle:   ptr(0),
			RebalanceGap:      ptr(DefaultRebalanceGap),
			MaxMovesPerSecond: ptr(DefaultMaxMovesPerSecond),
			Policy:            ptr(DefaultPolicy),
			PriceResizes:      ptr(true),
			DryRun:            ptr(false),
			GangAdmission:     ptr(true),
			Preemption:        ptr(true),
			StartDeadline:     duration(DefaultStartDeadline),
			StartRetries:      ptr(3),
		},
		LeaderElection: LeaderElectionConfiguration{
			LeaderElect:       ptr(true),
			ResourceNamespace: ptr("paddlecloud"),
			LeaseDuration:     duration(12 * time.Second),
			RenewDeadline:     duration(8 * time.Second),
			RetryPeriod:       duration(time.Second),
		},
	}
}

// Planner is what the autoscaler takes from a configuration: the plan's
// options and the resources counted as GPUs.
type Planner struct {
	Interval          time.Duration
	MaxLoadDesired    float64
	CoolDown          time.Duration
	MaxGrowPerCycle   int32
	RebalanceGap      float64
	MaxMovesPerSecond float64
	Policy            string
	PriceResizes      bool
	DryRun            bool
	GangAdmission     bool
	Preemption        bool
	StartDeadline     time.Duration
	StartRetries      int32
	GPUResources      []string
}

// Planner returns the planner's options of c, with the defaults for what c
// leaves out. Gang admission, and with it preemption, is off in a dry run,
// which admits nothing.
func (c *EDLConfiguration) Planner() Planner {
	full := Merge(Default(), c)
	a := full.Autoscaler
	maxGrow := min(max(*a.MaxGrowPerCycle, 0), 1<<31-1)
	return Planner{
		Interval:          a.Interval.Duration,
		MaxLoadDesired:    *a.MaxLoadDesired,
		CoolDown:          time.Duration(*a.CooldownCycles) * a.Interval.Duration,
		MaxGrowPerCycle:   int32(maxGrow), // #nosec G115 -- clamped to [0, MaxInt32] above
		RebalanceGap:      *a.RebalanceGap,
		MaxMovesPerSecond: *a.MaxMovesPerSecond,
		Policy:            *a.Policy,
		PriceResizes:      *a.PriceResizes,
		DryRun:            *a.DryRun,
		GangAdmission:     *a.GangAdmission && !*a.DryRun,
		Preemption:        *a.Preemption && *a.GangAdmission && !*a.DryRun,
		StartDeadline:     a.StartDeadline.Duration,
		StartRetries:      int32(min(max(*a.StartRetries, 0), 1<<31-1)), // #nosec G115 -- clamped to [0, MaxInt32]
		GPUResources:      full.GPUResources,
	}
}

func ptr[T any](v T) *T { return &v }

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
