package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// teamCollector reports the last cycle's team shares as they were: a scrape
// sees one cycle's teams whole, never a mix of two.
type teamCollector struct {
	share *prometheus.Desc

	mu     sync.Mutex
	shares []planner.TeamShare
}

func newTeamCollector() *teamCollector {
	return &teamCollector{share: prometheus.NewDesc("edl_team_share",
		"Each team's share at the last autoscaling cycle, by resource (cpu cores, memory bytes, gpu devices) and kind: deserved (its weighted fair share), used (what its jobs request), borrowed (used above deserved, else 0). No series without TrainingQueues.",
		[]string{LabelTeam, "resource", "kind"}, nil)}
}

// Teams records each team's deserved, used and borrowed share; it
// implements autoscaler.Metrics. The series are replaced by this cycle's: a
// team that is gone loses its series.
func (m *Metrics) Teams(shares []planner.TeamShare) {
	c := m.teamShare
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shares = append([]planner.TeamShare(nil), shares...)
}

func (c *teamCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.share }

func (c *teamCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	shares := c.shares
	c.mu.Unlock()
	for _, t := range shares {
		deserved, used := resourceValues(t.Deserved), resourceValues(t.Used)
		for i, res := range []string{ResourceCPU, ResourceMemory, ResourceGPU} {
			ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, deserved[i], t.Team, res, KindDeserved)
			ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, used[i], t.Team, res, KindUsed)
			ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, max(0, used[i]-deserved[i]), t.Team, res, KindBorrowed)
		}
	}
}

// resourceValues is r in the metrics' base units: CPU cores, memory bytes,
// GPU devices.
func resourceValues(r planner.Resources) [3]float64 {
	return [3]float64{float64(r.CPUMilli) / 1000, float64(r.MemoryMega) * mebi, float64(r.GPU)}
}
