package experiment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRegrowLags(t *testing.T) {
	s := func(sec, web, trainers int) Sample {
		return Sample{At: time.Duration(sec) * time.Second, WebDesired: web, RunningTrainers: trainers}
	}
	samples := []Sample{
		s(0, 400, 100), s(2, 400, 100),
		// Down-step at 3 s: 100 → 200 trainers, 95% (195) reached at 10 s.
		s(4, 300, 100), s(6, 300, 150), s(8, 300, 190), s(10, 300, 196), s(12, 300, 200),
		// Up-step at 13 s: not a down-step.
		s(14, 400, 150), s(16, 400, 100),
		// Down-step at 17 s whose trainers never grow: no lag.
		s(18, 300, 100), s(20, 300, 99),
		// Down-step at 21 s: 99 → 120 at once.
		s(22, 200, 120),
	}
	steps := []time.Duration{3 * time.Second, 13 * time.Second, 17 * time.Second, 21 * time.Second}
	assert.Equal(t, []time.Duration{7 * time.Second, time.Second}, regrowLags(samples, steps))
	assert.Empty(t, regrowLags(samples, nil), "no steps, no lags")
}

func TestLagsAreTenthsOfSeconds(t *testing.T) {
	assert.Equal(t, "9.5 s, 3.0 s", lags([]time.Duration{9516845967, 3 * time.Second}))
	assert.Equal(t, "—", lags(nil))
}
