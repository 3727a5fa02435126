package scale

import (
	"sort"
	"time"

	"github.com/paddlepaddle/edl/test/framework"
)

// RequestCount is how many requests of one verb on one resource edl sent.
type RequestCount struct {
	Verb, Resource string
	// LeaderElection marks the requests of edl's leader-election client.
	LeaderElection bool
	N              int
}

// CountRequests counts the requests by verb and resource, sorted by verb
// then resource, the leader election's apart and last.
func CountRequests(events []framework.AuditEvent) []RequestCount {
	type key struct {
		verb, resource string
		leader         bool
	}
	counts := map[key]int{}
	for _, e := range events {
		counts[key{e.Verb, e.Resource(), e.LeaderElection()}]++
	}
	out := make([]RequestCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, RequestCount{Verb: k.verb, Resource: k.resource, LeaderElection: k.leader, N: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.LeaderElection != b.LeaderElection {
			return !a.LeaderElection
		}
		if a.Verb != b.Verb {
			return a.Verb < b.Verb
		}
		return a.Resource < b.Resource
	})
	return out
}

// Kinds of request a RequestBucket counts apart.
const (
	KindGet   = "get"
	KindList  = "list"
	KindWatch = "watch"
	KindWrite = "write"
)

// Kinds are the kinds of request, in the order the report shows them.
var Kinds = []string{KindGet, KindList, KindWatch, KindWrite}

// Kind is the kind of one request: its verb for get, list and watch, KindWrite
// for any verb that changes state.
func Kind(e framework.AuditEvent) string {
	if e.Write() {
		return KindWrite
	}
	return e.Verb
}

// RequestBucket counts edl's requests by kind in the width after At (time
// since the run's start). The leader election's are left out: they are
// steady and say nothing about the controller.
type RequestBucket struct {
	At     time.Duration
	ByKind map[string]int
}

// BucketRequests counts the requests by kind in consecutive buckets of width
// from start until end; every bucket is there, empty or not.
func BucketRequests(events []framework.AuditEvent, start, end time.Time, width time.Duration) []RequestBucket {
	if !end.After(start) || width <= 0 {
		return nil
	}
	n := int((end.Sub(start) + width - 1) / width)
	out := make([]RequestBucket, n)
	for i := range out {
		out[i] = RequestBucket{At: time.Duration(i) * width, ByKind: map[string]int{}}
	}
	for _, e := range events {
		if e.LeaderElection() || e.Received.Before(start) || !e.Received.Before(end) {
			continue
		}
		out[int(e.Received.Sub(start)/width)].ByKind[Kind(e)]++
	}
	return out
}
