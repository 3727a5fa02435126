package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// TestTeamsReportsDeservedUsedAndBorrowed: a team above its share borrows
// the difference, a team below it borrows nothing; a team gone from the
// next cycle loses its series.
func TestTeamsReportsDeservedUsedAndBorrowed(t *testing.T) {
	m := New("v1")
	m.Teams([]planner.TeamShare{
		{Team: "nlp", Deserved: planner.Resources{CPUMilli: 4000, MemoryMega: 1024}, Used: planner.Resources{CPUMilli: 6500, MemoryMega: 512, GPU: 1}},
		{Team: "vision", Deserved: planner.Resources{CPUMilli: 8000, MemoryMega: 2048, GPU: 2}, Used: planner.Resources{CPUMilli: 2000}},
	})
	want := `
# HELP edl_team_share Each team's share at the last autoscaling cycle, by resource (cpu cores, memory bytes, gpu devices) and kind: deserved (its weighted fair share), used (what its jobs request), borrowed (used above deserved, else 0). No series without TrainingQueues.
# TYPE edl_team_share gauge
edl_team_share{kind="borrowed",resource="cpu",team="nlp"} 2.5
edl_team_share{kind="borrowed",resource="cpu",team="vision"} 0
edl_team_share{kind="borrowed",resource="gpu",team="nlp"} 1
edl_team_share{kind="borrowed",resource="gpu",team="vision"} 0
edl_team_share{kind="borrowed",resource="memory",team="nlp"} 0
edl_team_share{kind="borrowed",resource="memory",team="vision"} 0
edl_team_share{kind="deserved",resource="cpu",team="nlp"} 4
edl_team_share{kind="deserved",resource="cpu",team="vision"} 8
edl_team_share{kind="deserved",resource="gpu",team="nlp"} 0
edl_team_share{kind="deserved",resource="gpu",team="vision"} 2
edl_team_share{kind="deserved",resource="memory",team="nlp"} 1.073741824e+09
edl_team_share{kind="deserved",resource="memory",team="vision"} 2.147483648e+09
edl_team_share{kind="used",resource="cpu",team="nlp"} 6.5
edl_team_share{kind="used",resource="cpu",team="vision"} 2
edl_team_share{kind="used",resource="gpu",team="nlp"} 1
edl_team_share{kind="used",resource="gpu",team="vision"} 0
edl_team_share{kind="used",resource="memory",team="nlp"} 5.36870912e+08
edl_team_share{kind="used",resource="memory",team="vision"} 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want), "edl_team_share"))

	m.Teams([]planner.TeamShare{{Team: "vision", Used: planner.Resources{CPUMilli: 1000}}})
	require.Equal(t, 9, testutil.CollectAndCount(m.teamShare), "nlp's series are gone")
	m.Teams(nil)
	require.Equal(t, 0, testutil.CollectAndCount(m.teamShare), "no teams, no series")
}
