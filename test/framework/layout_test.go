package framework

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestSchedulerConfig(t *testing.T) {
	type plugin struct {
		Name string `json:"name"`
	}
	var cfg struct {
		Kind             string `json:"kind"`
		ClientConnection struct {
			Kubeconfig string `json:"kubeconfig"`
		} `json:"clientConnection"`
		LeaderElection struct {
			LeaderElect bool `json:"leaderElect"`
		} `json:"leaderElection"`
		Profiles []struct {
			Plugins struct {
				Score struct {
					Disabled []plugin `json:"disabled"`
				} `json:"score"`
			} `json:"plugins"`
			PluginConfig []struct {
				Name string `json:"name"`
				Args struct {
					ScoringStrategy struct {
						Type string `json:"type"`
					} `json:"scoringStrategy"`
				} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}

	require.NoError(t, yaml.Unmarshal(schedulerConfig("/dir/scheduler.kubeconfig", "MostAllocated"), &cfg))
	assert.Equal(t, "KubeSchedulerConfiguration", cfg.Kind)
	assert.Equal(t, "/dir/scheduler.kubeconfig", cfg.ClientConnection.Kubeconfig, "--config makes the scheduler ignore --kubeconfig")
	assert.False(t, cfg.LeaderElection.LeaderElect)
	require.Len(t, cfg.Profiles, 1)
	require.Len(t, cfg.Profiles[0].PluginConfig, 1)
	assert.Equal(t, "MostAllocated", cfg.Profiles[0].PluginConfig[0].Args.ScoringStrategy.Type)
	assert.ElementsMatch(t, []plugin{{"NodeResourcesBalancedAllocation"}, {"PodTopologySpread"}}, cfg.Profiles[0].Plugins.Score.Disabled,
		"packing turns off the scores that spread pods")

	cfg.Profiles = nil
	require.NoError(t, yaml.Unmarshal(schedulerConfig("/k", "LeastAllocated"), &cfg))
	assert.Equal(t, "LeastAllocated", cfg.Profiles[0].PluginConfig[0].Args.ScoringStrategy.Type)
	assert.Empty(t, cfg.Profiles[0].Plugins.Score.Disabled, "spreading keeps the default scores")
}

func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	require.Less(t, lo, hi)
	ports, err := freePorts(20)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, port := range ports {
		assert.False(t, seen[port], "port %d twice", port)
		seen[port] = true
		assert.GreaterOrEqual(t, port, lo)
		assert.Less(t, port, hi)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if assert.NoError(t, err, "port %d is free", port) {
			_ = l.Close()
		}
	}
}

func TestLayoutArgs(t *testing.T) {
	p := &pki{caCert: "/pki/ca.crt", caKey: "/pki/ca.key", servingCert: "/pki/serving.crt", servingKey: "/pki/serving.key",
		saKey: "/pki/sa.key", saPub: "/pki/sa.pub", clients: map[string]clientCert{userFrontProxy: {cert: "/pki/fp.crt", key: "/pki/fp.key"}}}
	l := layout{dir: "/cp", pki: p, etcdURL: "http://127.0.0.1:2001", peerURL: "http://127.0.0.1:2002",
		apiPort: 2003, kcmPort: 2004, schedPort: 2005, kubeconfig: "/cp/kubeconfig",
		kcmKubeconfig: "/cp/kcm.kubeconfig", schedKubeconfig: "/cp/sched.kubeconfig", kwokConfigs: []string{"/s/a.yaml", "/s/b.yaml"}}
	assert.Equal(t, "https://127.0.0.1:2003", l.server())
	assert.Contains(t, l.etcdArgs(), "--listen-client-urls=http://127.0.0.1:2001")
	assert.Contains(t, l.etcdArgs(), "--data-dir=/cp/etcd")

	api := l.apiServerArgs([]string{"--profiling=true"})
	assert.Contains(t, api, "--secure-port=2003")
	assert.Contains(t, api, "--etcd-servers=http://127.0.0.1:2001")
	assert.Equal(t, "--profiling=true", api[len(api)-1], "the caller's flags come last, so that they win")

	kcm := l.controllerManagerArgs([]string{"--kube-api-qps=200"})
	assert.Contains(t, kcm, "--kubeconfig=/cp/kcm.kubeconfig")
	assert.Contains(t, kcm, "--secure-port=2004")
	assert.Equal(t, "--kube-api-qps=200", kcm[len(kcm)-1], "the caller's flags come last, so that they win")

	sched := l.schedulerArgs([]string{"--kube-api-qps=300"})
	assert.Contains(t, sched, "--secure-port=2005")
	assert.Equal(t, "--kube-api-qps=300", sched[len(sched)-1], "the caller's flags come last, so that they win")
	assert.NotContains(t, strings.Join(sched, " "), "--config=", "the defaults need no configuration file")
	l.schedConfig = "/cp/scheduler-config.yaml"
	assert.Equal(t, "--config=/cp/scheduler-config.yaml", l.schedulerArgs(nil)[0])

	kw := l.kwokArgs()
	assert.Contains(t, kw, "--kubeconfig=/cp/kubeconfig")
	assert.Equal(t, []string{"--config=/s/a.yaml", "--config=/s/b.yaml"}, kw[len(kw)-2:], "one --config per stage")
}
