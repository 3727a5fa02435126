package trace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkRun replays workload-1 at 1.0× load under each policy: the
// cost of one run of the comparison.
func BenchmarkRun(b *testing.B) {
	apps := loadApps(b)
	w, err := ReadWorkload(testWorkload, apps)
	require.NoError(b, err)
	cfg := DefaultConfig()
	for _, p := range Policies(cfg.Nodes * cfg.GPUsPerNode) {
		b.Run(p.Name, func(b *testing.B) {
			for b.Loop() {
				r, err := Run(cfg, w, p)
				require.NoError(b, err)
				b.ReportMetric(float64(r.Plans), "plans/op")
			}
		})
	}
}
