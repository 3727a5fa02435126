package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/config"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: edl.paddlepaddle.org/v1alpha1\nkind: EDLConfiguration\n"+body), 0o600))
	return path
}

// TestConfigFileSetsTheOptionsAndFlagsOverrideIt: the file's fields become
// the options, a flag on the command line wins over the file, and the
// effective configuration holds every field.
func TestConfigFileSetsTheOptionsAndFlagsOverrideIt(t *testing.T) {
	path := writeConfig(t, "autoscaler:\n  interval: 2s\n  maxLoadDesired: 0.8\n  cooldownCycles: 9\ngpuResources: [a.com/gpu, b.com/gpu]\nleaderElection:\n  leaderElect: false\n")
	o, err := parseFlags([]string{"-config", path, "-cooldown_cycles", "4"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, o.autoscaleInterval)
	assert.Equal(t, 0.8, o.maxLoadDesired)
	assert.Equal(t, 4, o.cooldownCycles, "the command line overrides the file")
	assert.Equal(t, "a.com/gpu,b.com/gpu", o.gpuResources)
	assert.False(t, o.leaderElect)

	assert.Empty(t, config.Missing(o.effective))
	assert.Equal(t, 4, *o.effective.Autoscaler.CooldownCycles)
	assert.Equal(t, 0.8, *o.effective.Autoscaler.MaxLoadDesired)
	assert.Equal(t, 3, *config.Default().Autoscaler.CooldownCycles)
	assert.Equal(t, 2, *o.effective.Workers, "a default")
	given := func(flag string) bool {
		f, ok := config.FieldOfFlag(flag)
		require.True(t, ok, flag)
		_, set := f.Get(o.given)
		return set
	}
	assert.False(t, given("workers"), "what neither the file nor the command line set is not given")
	assert.True(t, given("cooldown_cycles"))
	assert.True(t, given("autoscale_interval"))
}

// TestPreemptionFromTheFileOrTheFlag: autoscaler.preemption turns
// preemption off as -preemption=false does, and the flag wins over the file.
func TestPreemptionFromTheFileOrTheFlag(t *testing.T) {
	path := writeConfig(t, "autoscaler:\n  preemption: false\n")
	cases := []struct {
		name string
		args []string
		want bool
	}{
		{"default", nil, true},
		{"the flag", []string{"-preemption=false"}, false},
		{"the file", []string{"-config", path}, false},
		{"the flag over the file", []string{"-config", path, "-preemption=true"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseFlags(c.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, c.want, o.preemption)
			assert.Equal(t, c.want, *o.effective.Autoscaler.Preemption, "the configuration logged and published")
			assert.Equal(t, c.want, o.effective.Planner().Preemption, "the planner's option")
		})
	}
}

// TestEveryConfigFieldIsAFlag: each field of the file has the flag of the
// same option, with the configuration's default.
func TestEveryConfigFieldIsAFlag(t *testing.T) {
	t.Setenv(podNamespaceEnv, "")
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, config.Default(), o.effective, "the flags' defaults are the configuration's")
}

// TestBadConfigFileIsOneLine: a mistake in the file is one line naming the
// file and the field, exit code 2.
func TestBadConfigFileIsOneLine(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown field", "autoscaler:\n  maxLoad: 0.5\n", `unknown field "autoscaler.maxLoad"`},
		{"out of range", "autoscaler:\n  maxLoadDesired: 1.5\n", "invalid value 1.5 for autoscaler.maxLoadDesired: must be greater than 0 and at most 1"},
		{"wrong type", "workers: many\n", "workers: must be an integer, not a string"},
		{"bad log level", "logLevel: loud\n", `invalid value "loud" for logLevel: must be debug`},
		{"bad namespace", "leaderElection:\n  resourceNamespace: Paddle_Cloud\n", `invalid value "Paddle_Cloud" for leaderElection.resourceNamespace`},
		{"empty gpu list", "gpuResources: []\n", `invalid value "" for gpuResources: name at least one resource`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, c.body)
			code, stdout, stderr := runEDL("-config", path)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.Len(t, lines, 1, stderr)
			assert.True(t, strings.HasPrefix(lines[0], "edl: config file "+path+": "), lines[0])
			assert.Contains(t, lines[0], c.want)
		})
	}
	code, _, stderr := runEDL("-config", filepath.Join(t.TempDir(), "none.yaml"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "edl: cannot read the config file: ")

	// The same value on the command line names the flag.
	code, _, stderr = runEDL("-config", writeConfig(t, "workers: 3\n"), "-max_load_desired", "1.5")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "invalid value 1.5 for flag -max_load_desired")
}

// TestLeaseNamespaceFollowsThePod: in a pod (POD_NAMESPACE, which
// edl_controller.yaml sets through the downward API) the Lease is in the
// pod's namespace unless the file or a flag names another; outside a pod
// it is the configuration's default.
func TestLeaseNamespaceFollowsThePod(t *testing.T) {
	path := writeConfig(t, "leaderElection:\n  resourceNamespace: from-file\n")
	cases := []struct {
		name, podNamespace string
		args               []string
		want               string
	}{
		{"outside a pod", "", nil, "paddlecloud"},
		{"in a pod", "ml-system", nil, "ml-system"},
		{"the file over the pod", "ml-system", []string{"-config", path}, "from-file"},
		{"the flag over the pod", "ml-system", []string{"-leader_elect_namespace", "from-flag"}, "from-flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(podNamespaceEnv, c.podNamespace)
			o, err := parseFlags(c.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, c.want, o.leaderElectNS)
			assert.Equal(t, c.want, *o.effective.LeaderElection.ResourceNamespace, "the configuration logged and published")
		})
	}
}
