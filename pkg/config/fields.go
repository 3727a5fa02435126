package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Field is one field of EDLConfiguration and the edl flag that sets the
// same option. Its values are written as the flag takes them ("5s", "0.97",
// "true", "nvidia.com/gpu,example.com/gpu").
type Field struct {
	// Path is the field as the file spells it: "autoscaler.interval".
	Path string
	// Flag is edl's flag, without its dash: "autoscale_interval".
	Flag string
	// duration says the value is a duration, which the file writes as a
	// string ("5s").
	duration bool
	get      func(*EDLConfiguration) (string, bool)
	set      func(*EDLConfiguration, string) error
}

// Get returns the field's value in c as the flag would take it, and whether
// c sets it.
func (f Field) Get(c *EDLConfiguration) (string, bool) { return f.get(c) }

// Set sets the field in c from a value as the flag takes it.
func (f Field) Set(c *EDLConfiguration, value string) error {
	if err := f.set(c, value); err != nil {
		return fmt.Errorf("invalid value %q for %s: %w", value, f.Path, err)
	}
	return nil
}

// Fields are every field of EDLConfiguration, in the order of the file, with
// its flag.
var Fields = []Field{
	field("logLevel", "log_level", func(c *EDLConfiguration) **string { return &c.LogLevel }, str, parseStr),
	field("workers", "workers", func(c *EDLConfiguration) **int { return &c.Workers }, strconv.Itoa, strconv.Atoi),
	durationField("resync", "resync", func(c *EDLConfiguration) **metav1.Duration { return &c.Resync }),
	{
		Path: "gpuResources", Flag: "gpu_resources",
		get: func(c *EDLConfiguration) (string, bool) {
			return strings.Join(c.GPUResources, ","), c.GPUResources != nil
		},
		set: func(c *EDLConfiguration, s string) error {
			c.GPUResources = []string{}
			for _, n := range strings.Split(s, ",") {
				if n = strings.TrimSpace(n); n != "" {
					c.GPUResources = append(c.GPUResources, n)
				}
			}
			return nil
		},
	},
	field("httpAddr", "http_addr", func(c *EDLConfiguration) **string { return &c.HTTPAddr }, str, parseStr),
	field("secureMetrics", "secure_metrics", func(c *EDLConfiguration) **bool { return &c.SecureMetrics }, strconv.FormatBool, strconv.ParseBool),
	field("kubeAPIQPS", "kube_api_qps", func(c *EDLConfiguration) **float64 { return &c.KubeAPIQPS }, formatFloat, parseFloat),
	field("kubeAPIBurst", "kube_api_burst", func(c *EDLConfiguration) **int { return &c.KubeAPIBurst }, strconv.Itoa, strconv.Atoi),

	durationField("autoscaler.interval", "autoscale_interval", func(c *EDLConfiguration) **metav1.Duration { return &c.Autoscaler.Interval }),
	field("autoscaler.maxLoadDesired", "max_load_desired", func(c *EDLConfiguration) **float64 { return &c.Autoscaler.MaxLoadDesired }, formatFloat, parseFloat),
	field("autoscaler.cooldownCycles", "cooldown_cycles", func(c *EDLConfiguration) **int { return &c.Autoscaler.CooldownCycles }, strconv.Itoa, strconv.Atoi),
	field("autoscaler.maxGrowPerCycle", "max_grow_per_cycle", func(c *EDLConfiguration) **int { return &c.Autoscaler.MaxGrowPerCycle }, strconv.Itoa, strconv.Atoi),
	field("autoscaler.rebalanceGap", "rebalance_gap", func(c *EDLConfiguration) **float64 { return &c.Autoscaler.RebalanceGap }, formatFloat, parseFloat),
	field("autoscaler.maxMovesPerSecond", "max_moves_per_second", func(c *EDLConfiguration) **float64 { return &c.Autoscaler.MaxMovesPerSecond }, formatFloat, parseFloat),
	field("autoscaler.policy", "policy", func(c *EDLConfiguration) **string { return &c.Autoscaler.Policy }, str, parseStr),
	field("autoscaler.priceResizes", "price_resizes", func(c *EDLConfiguration) **bool { return &c.Autoscaler.PriceResizes }, strconv.FormatBool, strconv.ParseBool),
	field("autoscaler.dryRun", "dry_run", func(c *EDLConfiguration) **bool { return &c.Autoscaler.DryRun }, strconv.FormatBool, strconv.ParseBool),
	field("autoscaler.gangAdmission", "gang_admission", func(c *EDLConfiguration) **bool { return &c.Autoscaler.GangAdmission }, strconv.FormatBool, strconv.ParseBool),
	field("autoscaler.preemption", "preemption", func(c *EDLConfiguration) **bool { return &c.Autoscaler.Preemption }, strconv.FormatBool, strconv.ParseBool),
	durationField("autoscaler.startDeadline", "start_deadline", func(c *EDLConfiguration) **metav1.Duration { return &c.Autoscaler.StartDeadline }),
	field("autoscaler.startRetries", "start_retries", func(c *EDLConfiguration) **int { return &c.Autoscaler.StartRetries }, strconv.Itoa, strconv.Atoi),

	field("leaderElection.leaderElect", "leader_elect", func(c *EDLConfiguration) **bool { return &c.LeaderElection.LeaderElect }, strconv.FormatBool, strconv.ParseBool),
	field("leaderElection.resourceNamespace", "leader_elect_namespace", func(c *EDLConfiguration) **string { return &c.LeaderElection.ResourceNamespace }, str, parseStr),
	durationField("leaderElection.leaseDuration", "leader_elect_lease_duration", func(c *EDLConfiguration) **metav1.Duration { return &c.LeaderElection.LeaseDuration }),
	durationField("leaderElection.renewDeadline", "leader_elect_renew_deadline", func(c *EDLConfiguration) **metav1.Duration { return &c.LeaderElection.RenewDeadline }),
	durationField("leaderElection.retryPeriod", "leader_elect_retry_period", func(c *EDLConfiguration) **metav1.Duration { return &c.LeaderElection.RetryPeriod }),
}

// FieldOfFlag returns the field edl's flag name (without its dash) sets.
func FieldOfFlag(flag string) (Field, bool) {
	for _, f := range Fields {
		if f.Flag == flag {
			return f, true
		}
	}
	return Field{}, false
}

// Merge returns a copy of base with every field overlay sets taken from
// overlay.
func Merge(base, overlay *EDLConfiguration) *EDLConfiguration {
	out := &EDLConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	for _, from := range []*EDLConfiguration{base, overlay} {
		if from == nil {
			continue
		}
		for _, f := range Fields {
			if v, ok := f.get(from); ok {
				_ = f.set(out, v) // a value Get wrote always parses
			}
		}
	}
	return out
}

// Missing lists the fields c leaves out.
func Missing(c *EDLConfiguration) []string {
	var missing []string
	for _, f := range Fields {
		if _, ok := f.get(c); !ok {
			missing = append(missing, f.Path)
		}
	}
	return missing
}

// KeyValues are c's set fields as alternating paths and values, for a log
// line; none for a nil c.
func KeyValues(c *EDLConfiguration) []any {
	var kv []any
	if c == nil {
		return nil
	}
	for _, f := range Fields {
		if v, ok := f.get(c); ok {
			kv = append(kv, f.Path, v)
		}
	}
	return kv
}

func field[T any](path, flag string, p func(*EDLConfiguration) **T, format func(T) string, parse func(string) (T, error)) Field {
	return Field{
		Path: path, Flag: flag,
		get: func(c *EDLConfiguration) (string, bool) {
			if v := *p(c); v != nil {
				return format(*v), true
			}
			return "", false
		},
		set: func(c *EDLConfiguration, s string) error {
			v, err := parse(s)
			if err != nil {
				return err
			}
			*p(c) = &v
			return nil
		},
	}
}

func durationField(path, flag string, p func(*EDLConfiguration) **metav1.Duration) Field {
	f := field(path, flag, func(c *EDLConfiguration) **metav1.Duration { return p(c) },
		func(d metav1.Duration) string { return d.Duration.String() },
		func(s string) (metav1.Duration, error) {
			d, err := time.ParseDuration(s)
			if err != nil {
				return metav1.Duration{}, fmt.Errorf("not a duration (e.g. 5s, 1m30s)")
			}
			return metav1.Duration{Duration: d}, nil
		})
	f.duration = true
	return f
}

func str(s string) string                  { return s }
func parseStr(s string) (string, error)    { return s, nil }
func formatFloat(f float64) string         { return strconv.FormatFloat(f, 'g', -1, 64) }
func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
