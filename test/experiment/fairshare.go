package experiment

// Claim is one team's claim on a resource: its weight, what it would use
// (its demand) and what it is guaranteed.
type Claim struct {
	Weight            float64
	Demand, Guarantee float64
}

// FairShares splits capacity among the claims, weighted max-min fair, by
// water-filling: every team first gets its guarantee, as much of it as it
// demands (guarantees that together exceed the capacity are cut in
// proportion); then a water level rises, each team holding its weight
// times the level (never less than its guarantee), until its demand is met
// or the capacity runs out. A team never gets more than it demands: what a
// team cannot use goes to the others. It is the experiment's own reference,
// independent of the planner's.
func FairShares(capacity float64, claims []Claim) []float64 {
	out := make([]float64, len(claims))
	capacity = max(capacity, 0)
	floors := 0.0
	for i, c := range claims {
		out[i] = min(max(c.Guarantee, 0), max(c.Demand, 0))
		floors += out[i]
	}
	if floors >= capacity {
		if floors > 0 {
			for i := range out {
				out[i] *= capacity / floors
			}
		}
		return out
	}
	// at is what the claims hold at a level: their floor, or weight ×
	// level up to their demand.
	at := func(level float64) float64 {
		sum := 0.0
		for i, c := range claims {
			sum += max(out[i], min(max(c.Demand, 0), max(c.Weight, 0)*level))
		}
		return sum
	}
	// The level at which every demand is met is the highest that matters.
	hi := 0.0
	for _, c := range claims {
		if c.Weight > 0 {
			hi = max(hi, c.Demand/c.Weight)
		}
	}
	lo := 0.0
	if at(hi) > capacity {
		for range 200 {
			mid := (lo + hi) / 2
			if at(mid) <= capacity {
				lo = mid
			} else {
				hi = mid
			}
		}
		hi = lo
	}
	for i, c := range claims {
		out[i] = max(out[i], min(max(c.Demand, 0), max(c.Weight, 0)*hi))
	}
	return out
}
