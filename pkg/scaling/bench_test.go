package scaling

import "testing"

// BenchmarkFit fits one app's placements.csv (the Pollux measurements at 1
// to 4 nodes: 540 to 1,661 rows), and, as a planner fits a job that has
// run at a few sizes, three measurements.
//
//	go test -run '^$' -bench BenchmarkFit -benchmem ./pkg/scaling/
func BenchmarkFit(b *testing.B) {
	for _, app := range polluxApps {
		ms := readPlacements(b, app)
		b.Run(app, func(b *testing.B) {
			benchmarkFit(b, ms)
		})
	}
	b.Run("three-sizes", func(b *testing.B) {
		benchmarkFit(b, synthetic(syncBound, []size{{1, 1}, {2, 1}, {4, 1}}, []float64{64}, withNoise(0.05)))
	})
}

func benchmarkFit(b *testing.B, ms []Measurement) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fit(ms); err != nil {
			b.Fatal(err)
		}
	}
}
