package experiment

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFairShares(t *testing.T) {
	for _, c := range []struct {
		name     string
		capacity float64
		claims   []Claim
		want     []float64
	}{
		{"weights 2:1:1, every team oversubscribed", 400, []Claim{{Weight: 2, Demand: 1000}, {Weight: 1, Demand: 1000}, {Weight: 1, Demand: 1000}},
			[]float64{200, 100, 100}},
		{"an idle team's share goes to the others by weight", 300, []Claim{{Weight: 2, Demand: 1000}, {Weight: 1, Demand: 1000}, {Weight: 1}},
			[]float64{200, 100, 0}},
		{"a team demanding less than its share gets its demand, the rest goes on", 400, []Claim{{Weight: 2, Demand: 1000}, {Weight: 1, Demand: 40}, {Weight: 1, Demand: 1000}},
			[]float64{240, 40, 120}},
		{"demand below the capacity: every team its demand", 400, []Claim{{Weight: 2, Demand: 100}, {Weight: 1, Demand: 50}, {Weight: 1, Demand: 10}},
			[]float64{100, 50, 10}},
		{"a guarantee above the weighted share floors it", 400, []Claim{{Weight: 2, Demand: 1000}, {Weight: 1, Demand: 1000}, {Weight: 1, Demand: 1000, Guarantee: 160}},
			[]float64{160, 80, 160}},
		{"a guarantee below the weighted share changes nothing", 400, []Claim{{Weight: 2, Demand: 1000}, {Weight: 1, Demand: 1000}, {Weight: 1, Demand: 1000, Guarantee: 80}},
			[]float64{200, 100, 100}},
		{"a guarantee counts only up to the demand", 400, []Claim{{Weight: 2, Demand: 1000}, {Weight: 1, Demand: 1000}, {Weight: 1, Demand: 30, Guarantee: 80}},
			[]float64{246.67, 123.33, 30}},
		{"guarantees above the capacity are cut in proportion", 100, []Claim{{Weight: 1, Demand: 1000, Guarantee: 150}, {Weight: 1, Demand: 1000, Guarantee: 50}},
			[]float64{75, 25}},
		{"a lone team takes the whole capacity", 400, []Claim{{Weight: 2}, {Weight: 1}, {Weight: 1, Demand: 1000, Guarantee: 80}},
			[]float64{0, 0, 400}},
		{"no capacity", 0, []Claim{{Weight: 2, Demand: 10}, {Weight: 1, Demand: 10}}, []float64{0, 0}},
		{"no claims", 100, nil, []float64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FairShares(c.capacity, c.claims)
			assert.Len(t, got, len(c.want))
			sum, demand := 0.0, 0.0
			for i := range c.want {
				assert.InDelta(t, c.want[i], got[i], 0.01, "team %d", i)
				assert.LessOrEqual(t, got[i], c.claims[i].Demand+1e-9, "never more than the demand")
				sum += got[i]
				demand += c.claims[i].Demand
			}
			assert.InDelta(t, min(c.capacity, demand), sum, 0.01, "the capacity is shared out, up to the demand")
		})
	}
}
