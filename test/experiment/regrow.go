package experiment

import "time"

// RegrowShare is the share of a level's added trainers whose Running ends
// the regrowth after a web down-step.
const RegrowShare = 0.95

// regrowLags are, for each step that shrank the web service, how long the
// trainers took to grow into the room it left: from the step to the first
// sample with at least before + RegrowShare × (peak − before) trainers
// Running, where before is the last sample before the step and peak the
// most over the level (until the next step, or the end). Sampled, so each
// lag is rounded up to the sampling interval. A level whose trainers did
// not grow has no lag.
func regrowLags(samples []Sample, steps []time.Duration) []time.Duration {
	var out []time.Duration
	for i, step := range steps {
		next := time.Duration(1<<63 - 1)
		if i+1 < len(steps) {
			next = steps[i+1]
		}
		var before, first *Sample
		peak := 0
		for k := range samples {
			x := &samples[k]
			switch {
			case x.At < step:
				before = x
			case x.At < next:
				if first == nil {
					first = x
				}
				peak = max(peak, x.RunningTrainers)
			}
		}
		if before == nil || first == nil || first.WebDesired >= before.WebDesired || peak <= before.RunningTrainers {
			continue
		}
		target := float64(before.RunningTrainers) + RegrowShare*float64(peak-before.RunningTrainers)
		for k := range samples {
			if x := &samples[k]; x.At >= step && x.At < next && float64(x.RunningTrainers) >= target {
				out = append(out, x.At-step)
				break
			}
		}
	}
	return out
}
