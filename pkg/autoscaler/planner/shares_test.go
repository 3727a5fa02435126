package planner

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

var noLimit = vec{snapshot.Unlimited, snapshot.Unlimited, snapshot.Unlimited}

// asks is a team of weight w demanding d, without guarantee or limit.
func asks(w float64, d vec) teamClaim { return teamClaim{weight: w, demand: d, limit: noLimit} }

// TestDeserve: the water-filling rules, one case each.
func TestDeserve(t *testing.T) {
	cases := []struct {
		name     string
		capacity vec
		claims   []teamClaim
		want     []vec
	}{
		{
			name:     "weights 1 and 3, both asking for more than the pool: 25 and 75",
			capacity: vec{100_000, 0, 0},
			claims:   []teamClaim{asks(1, vec{200_000, 0, 0}), asks(3, vec{200_000, 0, 0})},
			want:     []vec{{25_000, 0, 0}, {75_000, 0, 0}},
		},
		{
			name:     "an idle team lends its share: the other deserves the pool",
			capacity: vec{100_000, 0, 0},
			claims:   []teamClaim{asks(1, vec{}), asks(1, vec{150_000, 0, 0})},
			want:     []vec{{}, {100_000, 0, 0}},
		},
		{
			name:     "a team that asks for less than its share gets what it asks, the rest goes on",
			capacity: vec{100_000, 0, 0},
			claims:   []teamClaim{asks(1, vec{10_000, 0, 0}), asks(1, vec{100_000, 0, 0})},
			want:     []vec{{10_000, 0, 0}, {90_000, 0, 0}},
		},
		{
			name:     "a limit caps a team even on an idle cluster",
			capacity: vec{100_000, 0, 0},
			claims: []teamClaim{{weight: 3, demand: vec{100_000, 0, 0}, limit: vec{30_000, snapshot.Unlimited, snapshot.Unlimited}},
				asks(1, vec{100_000, 0, 0})},
			want: []vec{{30_000, 0, 0}, {70_000, 0, 0}},
		},
		{
			name:     "a guarantee floors the share above the weight's",
			capacity: vec{100_000, 0, 0},
			claims: []teamClaim{{weight: 1, demand: vec{100_000, 0, 0}, guarantee: vec{60_000, 0, 0}, limit: noLimit},
				asks(3, vec{100_000, 0, 0})},
			want: []vec{{60_000, 0, 0}, {40_000, 0, 0}},
		},
		{
			name:     "a guarantee is no share of what the team does not ask for",
			capacity: vec{100_000, 0, 0},
			claims: []teamClaim{{weight: 1, demand: vec{5_000, 0, 0}, guarantee: vec{60_000, 0, 0}, limit: noLimit},
				asks(1, vec{100_000, 0, 0})},
			want: []vec{{5_000, 0, 0}, {95_000, 0, 0}},
		},
		{
			name:     "guarantees above the pool are cut in proportion",
			capacity: vec{100_000, 0, 0},
			claims: []teamClaim{{weight: 1, demand: vec{150_000, 0, 0}, guarantee: vec{150_000, 0, 0}, limit: noLimit},
				{weight: 1, demand: vec{50_000, 0, 0}, guarantee: vec{50_000, 0, 0}, limit: noLimit}},
			want: []vec{{75_000, 0, 0}, {25_000, 0, 0}},
		},
		{
			name:     "dominant resources: a CPU-heavy and a memory-heavy team share both evenly",
			capacity: vec{100_000, 100_000, 0},
			claims:   []teamClaim{asks(1, vec{100_000, 10_000, 0}), asks(1, vec{10_000, 100_000, 0})},
			want:     []vec{{90_909, 9_090, 0}, {9_090, 90_909, 0}},
		},
		{
			name:     "GPUs are shared by weight like any resource",
			capacity: vec{100_000, 400_000, 8},
			claims:   []teamClaim{asks(1, vec{20_000, 40_000, 8}), asks(3, vec{20_000, 40_000, 8})},
			want:     []vec{{5_000, 10_000, 2}, {15_000, 30_000, 6}},
		},
		{
			name:     "a team asking for GPUs of a pool without any deserves none of them",
			capacity: vec{100_000, 100_000, 0},
			claims:   []teamClaim{asks(1, vec{10_000, 10_000, 2}), asks(1, vec{50_000, 0, 0})},
			want:     []vec{{0, 0, 0}, {50_000, 0, 0}},
		},
		{
			name:     "no team: nothing to share",
			capacity: vec{100_000, 0, 0},
			want:     []vec{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := deserve(tc.capacity, tc.claims)
			assert.Len(t, got, len(tc.want))
			for i := range tc.want {
				for r := range numRes {
					assert.InDelta(t, tc.want[i][r], got[i][r], 2, "team %d, %s: %v", i, resNames[r], got)
				}
			}
			assertShares(t, tc.capacity, tc.claims, got)
		})
	}
}

// TestDeserveProperties: over random pools and teams, no team deserves more
// than it asks for or its limit, the shares fit the pool, and nothing is
// left idle that a team could use: a team below its ceiling needs a
// resource the shares use up (to rounding: a GPU a team).
func TestDeserveProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	for range 2000 {
		capacity := vec{rng.Int64N(200_000), rng.Int64N(400_000), rng.Int64N(9)}
		claims := make([]teamClaim, rng.IntN(6))
		for i := range claims {
			c := asks(float64(1+rng.IntN(4)), vec{rng.Int64N(150_000), rng.Int64N(300_000), rng.Int64N(6)})
			if rng.IntN(3) == 0 {
				c.limit = vec{rng.Int64N(100_000), snapshot.Unlimited, snapshot.Unlimited}
			}
			if rng.IntN(3) == 0 {
				c.guarantee = vec{rng.Int64N(60_000), 0, 0}
			}
			claims[i] = c
		}
		got := deserve(capacity, claims)
		var sum vec
		for _, g := range got {
			sum = sum.plus(g)
		}
		for i, c := range claims {
			short, exhausted := false, false
			for r := range numRes {
				if got[i][r] < min(c.demand[r], c.limit[r]) {
					short = true
					if capacity[r]-sum[r] <= int64(len(claims)) {
						exhausted = true
					}
				}
			}
			if short && !exhausted {
				t.Fatalf("team %d is short of its ceiling while every resource it needs has room: capacity %v, claims %+v, shares %v", i, capacity, claims, got)
			}
		}
		if !assertShares(t, capacity, claims, got) {
			t.Fatalf("capacity %v, claims %+v: %v", capacity, claims, got)
		}
	}
}

// assertShares checks what every answer of deserve must satisfy.
func assertShares(t *testing.T, capacity vec, claims []teamClaim, got []vec) bool {
	t.Helper()
	ok := assert.Len(t, got, len(claims))
	var sum vec
	for i, c := range claims {
		for r := range numRes {
			ok = assert.GreaterOrEqual(t, got[i][r], int64(0)) && ok
			ok = assert.LessOrEqual(t, got[i][r], max(0, min(c.demand[r], c.limit[r])), "team %d deserves more %s than it asks for", i, resNames[r]) && ok
		}
		sum = sum.plus(got[i])
	}
	for r := range numRes {
		ok = assert.LessOrEqual(t, sum[r], max(capacity[r], 0), "the shares of %s exceed the pool", resNames[r]) && ok
	}
	return ok
}
