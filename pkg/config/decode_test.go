package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const header = "apiVersion: edl.paddlepaddle.org/v1alpha1\nkind: EDLConfiguration\n"

func TestDecodeReadsEveryField(t *testing.T) {
	c, err := Decode([]byte(header + `
logLevel: debug
workers: 4
resync: 1m
gpuResources: [nvidia.com/gpu, example.com/gpu]
httpAddr: ":9090"
secureMetrics: true
kubeAPIQPS: 50
kubeAPIBurst: 60
autoscaler:
  interval: 2s
  maxLoadDesired: 0.8
  cooldownCycles: 10
  maxGrowPerCycle: 3
  rebalanceGap: 0.25
  maxMovesPerSecond: 25
  policy: fulfillment
  priceResizes: false
  dryRun: true
  gangAdmission: false
  preemption: false
  startDeadline: 5m
  startRetries: 1
leaderElection:
  leaderElect: false
  resourceNamespace: edl
  leaseDuration: 20s
  renewDeadline: 15s
  retryPeriod: 3s
`))
	require.NoError(t, err)
	assert.Empty(t, Missing(c), "every field set")
	assert.Equal(t, "debug", *c.LogLevel)
	assert.True(t, *c.SecureMetrics)
	assert.Equal(t, []string{"nvidia.com/gpu", "example.com/gpu"}, c.GPUResources)
	assert.Equal(t, 2*time.Second, c.Autoscaler.Interval.Duration)
	assert.Equal(t, 0.8, *c.Autoscaler.MaxLoadDesired)
	assert.Equal(t, "fulfillment", *c.Autoscaler.Policy)
	assert.False(t, *c.Autoscaler.PriceResizes)
	assert.False(t, *c.Autoscaler.GangAdmission)
	assert.False(t, *c.Autoscaler.Preemption)
	assert.Equal(t, "edl", *c.LeaderElection.ResourceNamespace)
	assert.Equal(t, 3*time.Second, c.LeaderElection.RetryPeriod.Duration)
}

// TestDecodeBadInputIsOneLineNamingTheField: every mistake is one line, and
// names the field (or apiVersion, kind) it is about.
func TestDecodeBadInputIsOneLineNamingTheField(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"unknown field":         {"autoscaler:\n  maxLoad: 0.5\n", `unknown field "autoscaler.maxLoad"`},
		"unknown top field":     {"interval: 5s\n", `unknown field "interval"`},
		"a string for a number": {"autoscaler:\n  maxLoadDesired: high\n", "autoscaler.maxLoadDesired: must be a number, not a string"},
		"a fraction for an int": {"workers: 2.5\n", "workers: must be an integer, not 2.5"},
		"a number for a duration": {"autoscaler:\n  interval: 5\n",
			`autoscaler.interval: must be a duration such as "5s", not 5`},
		"not a duration":     {"leaderElection:\n  retryPeriod: soon\n", `invalid value "soon" for leaderElection.retryPeriod: not a duration`},
		"a scalar section":   {"autoscaler: 3\n", "autoscaler: must be an object, not a number"},
		"a string list":      {"gpuResources: nvidia.com/gpu\n", "gpuResources: must be a list of strings, not a string"},
		"a bool as string":   {"autoscaler:\n  dryRun: maybe\n", "autoscaler.dryRun: must be true or false, not a string"},
		"a repeated field":   {"workers: 2\nworkers: 3\n", `key "workers" already set`},
		"wrong apiVersion":   {"", ""},
		"not YAML":           {"a: [\n", "not YAML"},
		"not an object":      {"- a\n", "not a YAML object with apiVersion and kind"},
		"wrong kind":         {"", ""},
		"missing apiVersion": {"", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			data := header + c.body
			switch name {
			case "wrong apiVersion":
				data, c.want = "apiVersion: edl.paddlepaddle.org/v1\nkind: EDLConfiguration\n", `apiVersion: must be edl.paddlepaddle.org/v1alpha1, not "edl.paddlepaddle.org/v1"`
			case "wrong kind":
				data, c.want = "apiVersion: edl.paddlepaddle.org/v1alpha1\nkind: Config\n", `kind: must be EDLConfiguration, not "Config"`
			case "missing apiVersion":
				data, c.want = "kind: EDLConfiguration\n", `apiVersion: must be edl.paddlepaddle.org/v1alpha1, not "<nil>"`
			case "not YAML", "not an object":
				data = c.body
			}
			_, err := Decode([]byte(data))
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(header+"autoscaler:\n  intervall: 5s\n"), 0o600))
	_, err := Load(path)
	require.Error(t, err)
	assert.Equal(t, "config file "+path+`: unknown field "autoscaler.intervall"`, err.Error())

	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "cannot read the config file: "), err.Error())
}
