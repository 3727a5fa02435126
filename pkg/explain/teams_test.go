package explain

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

func withTeams(r autoscaler.Report) autoscaler.Report {
	r.Teams = []autoscaler.TeamReport{
		{Team: "default", Deserved: planner.Resources{CPUMilli: 8000}, Used: planner.Resources{CPUMilli: 8000}},
		{Team: "nlp", Namespaces: []string{"nlp", "nlp-dev"},
			Deserved: planner.Resources{CPUMilli: 16000, MemoryMega: 4096}, Used: planner.Resources{CPUMilli: 40000, MemoryMega: 4096},
			Borrowed: planner.Resources{CPUMilli: 24000}},
		{Team: "vision", Namespaces: []string{"vision"},
			Deserved: planner.Resources{CPUMilli: 40000, GPU: 2}, Used: planner.Resources{CPUMilli: 13000, GPU: 2},
			Lent: planner.Resources{CPUMilli: 27000}},
	}
	return r
}

// TestExplainPrintsTheTeamsShares: each team with its namespaces, what it
// deserves and uses, and what it borrows or lends; nothing without teams.
func TestExplainPrintsTheTeamsShares(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Print(&out, Result{Report: withTeams(sampleReport())}, "table", ""))
	assert.Contains(t, out.String(), `teams:
  default
    deserved   8 CPU, 0 MiB memory, 0 GPU
    used       8 CPU, 0 MiB memory, 0 GPU
  nlp (nlp, nlp-dev)
    deserved   16 CPU, 4096 MiB memory, 0 GPU
    used       40 CPU, 4096 MiB memory, 0 GPU
    borrowed   24 CPU, 0 MiB memory, 0 GPU
  vision (vision)
    deserved   40 CPU, 0 MiB memory, 2 GPU
    used       13 CPU, 0 MiB memory, 2 GPU
    lent       27 CPU, 0 MiB memory, 0 GPU

cluster: `)

	out.Reset()
	require.NoError(t, Print(&out, Result{Report: sampleReport()}, "table", ""))
	assert.NotContains(t, out.String(), "teams:")
}

func TestExplainPrintsTheTeamsAsJSONAndYAML(t *testing.T) {
	type share struct {
		CPUMilli int64
	}
	var back struct {
		Teams []struct {
			Team       string   `json:"team"`
			Namespaces []string `json:"namespaces"`
			Deserved   share    `json:"deserved"`
			Used       share    `json:"used"`
			Borrowed   share    `json:"borrowed"`
			Lent       share    `json:"lent"`
		} `json:"teams"`
	}
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, Print(&out, Result{Report: withTeams(sampleReport())}, format, ""))
			if format == "json" {
				require.NoError(t, json.Unmarshal(out.Bytes(), &back))
			} else {
				require.NoError(t, yaml.Unmarshal(out.Bytes(), &back))
			}
			require.Len(t, back.Teams, 3)
			nlp := back.Teams[1]
			assert.Equal(t, "nlp", nlp.Team)
			assert.Equal(t, []string{"nlp", "nlp-dev"}, nlp.Namespaces)
			assert.Equal(t, int64(16000), nlp.Deserved.CPUMilli)
			assert.Equal(t, int64(40000), nlp.Used.CPUMilli)
			assert.Equal(t, int64(24000), nlp.Borrowed.CPUMilli)
			assert.Equal(t, int64(27000), back.Teams[2].Lent.CPUMilli)
		})
	}
}
