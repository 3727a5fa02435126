package planner

import "math"

// teamClaim is what one team asks of one pool, and the bounds on its share
// there: the input of [deserve].
type teamClaim struct {
	// weight is the team's weight (at least 1).
	weight float64
	// demand is what the team's jobs would use in the pool: their pods that
	// run, the minimums of their queued jobs, and trainers up to their max.
	demand vec
	// guarantee floors the share and limit caps it (the team's limit and
	// its namespaces' quota room); snapshot.Unlimited where none.
	guarantee, limit vec
}

// deserve shares capacity among the teams: weighted max-min fair on each
// team's dominant resource, by progressive filling. Every team first gets
// its guarantee (as much of it as it demands; guarantees that together
// exceed capacity are cut in proportion); then a water level rises, each
// team receiving its demand's shape scaled so that its dominant share is
// its weight times the level, until its demand or limit is met or a
// resource it needs runs out, at which point it stops and the others go
// on. A team never deserves more than it demands: the share a team cannot
// use goes to the teams that can, which is what lends an idle team's share.
func deserve(capacity vec, claims []teamClaim) []vec {
	n := len(claims)
	out := make([]vec, n)
	ceil := make([]vec, n) // what a team may reach: its demand within its limit
	for i, c := range claims {
		for r := range numRes {
			ceil[i][r] = max(0, min(c.demand[r], c.limit[r]))
		}
	}
	// 1. The guarantees, cut in proportion where they exceed capacity.
	var floors vec
	for i, c := range claims {
		for r := range numRes {
			out[i][r] = min(c.guarantee[r], ceil[i][r])
			floors[r] += out[i][r]
		}
	}
	for r := range numRes {
		if floors[r] > capacity[r] && floors[r] > 0 {
			scale := float64(max(capacity[r], 0)) / float64(floors[r])
			for i := range out {
				out[i][r] = int64(float64(out[i][r]) * scale)
			}
		}
	}
	// 2. Progressive filling of what is left, round by round: each round
	// raises the level as far as every resource allows, then freezes the
	// teams that reached their ceiling or need a resource that ran out. The
	// level works in real numbers, and the shares are rounded down at the
	// end, so that a GPU or two does not bend the others' shares.
	base := make([]fvec, n)
	share := make([]fvec, n)
	active := make([]bool, n)
	dominant := make([]float64, n) // the dominant share of a team's ceiling
	for i := range claims {
		for r := range numRes {
			base[i][r] = float64(out[i][r])
		}
		share[i] = base[i]
		dominant[i] = dominantShare(ceil[i], capacity)
		active[i] = dominant[i] > 0 && !math.IsInf(dominant[i], 1) && out[i] != ceil[i]
	}
	at := func(i int, level float64) fvec {
		f := math.Min(1, claims[i].weight*level/dominant[i])
		var v fvec
		for r := range numRes {
			v[r] = math.Max(base[i][r], f*float64(ceil[i][r]))
		}
		return v
	}
	sumAt := func(level float64) fvec {
		var sum fvec
		for i := range share {
			v := share[i]
			if active[i] {
				v = at(i, level)
			}
			for r := range numRes {
				sum[r] += v[r]
			}
		}
		return sum
	}
	fits := func(level float64) bool {
		sum := sumAt(level)
		for r := range numRes {
			if sum[r] > float64(capacity[r])*(1+1e-12) {
				return false
			}
		}
		return true
	}
	level := 0.0
	for anyActive(active) {
		lo, hi := level, level+1
		for fits(hi) && hi < 1e12 {
			lo, hi = hi, hi*2
		}
		for range 100 {
			mid := (lo + hi) / 2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		level = lo
		for i := range share {
			if active[i] {
				share[i] = at(i, level)
			}
		}
		used := sumAt(level)
		// Freeze who is done: at its ceiling, or needing a resource that ran
		// out.
		froze := false
		for i := range share {
			if !active[i] {
				continue
			}
			full := true
			for r := range numRes {
				if share[i][r] < float64(ceil[i][r])*(1-1e-9) {
					full = false
					if float64(capacity[r])-used[r] <= float64(capacity[r])*1e-9 {
						full = true
						break
					}
				}
			}
			if full {
				active[i], froze = false, true
			}
		}
		if !froze {
			break
		}
	}
	for i := range share {
		for r := range numRes {
			out[i][r] = min(ceil[i][r], int64(math.Floor(share[i][r]+1e-6)))
		}
	}
	return out
}

// fvec is a vec in real numbers, for the water level.
type fvec [numRes]float64

// dominantShare is the largest share of capacity that v takes of any
// resource the capacity has; infinite when v asks for a resource the
// capacity lacks.
func dominantShare(v, capacity vec) float64 {
	d := 0.0
	for r := range numRes {
		if capacity[r] > 0 {
			d = math.Max(d, float64(v[r])/float64(capacity[r]))
		} else if v[r] > 0 {
			return math.Inf(1)
		}
	}
	return d
}

func anyActive(active []bool) bool {
	for _, a := range active {
		if a {
			return true
		}
	}
	return false
}
