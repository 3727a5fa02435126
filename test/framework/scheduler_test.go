package framework

import (
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
