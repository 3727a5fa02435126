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

// StatusWrites are edl's writes of one job's status subresource.
type StatusWrites struct {
	Updates, Patches int
	// PerJobMinute is the mean of writes per job per minute over the
	// window; Peak the most writes of one job within 60 s.
	PerJobMinute float64
	Peak         int
}

// CountStatusWrites counts edl's writes of trainingjobs/status between
// start and end, of jobs jobs.
func CountStatusWrites(events []framework.AuditEvent, start, end time.Time, jobs int) StatusWrites {
	var s StatusWrites
	byJob := map[string][]time.Time{}
	for _, e := range events {
		if e.LeaderElection() || e.Resource() != "trainingjobs/status" || !e.Write() ||
			e.Received.Before(start) || !e.Received.Before(end) {
			continue
		}
		switch e.Verb {
		case "update":
			s.Updates++
		case "patch":
			s.Patches++
		}
		key := e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		byJob[key] = append(byJob[key], e.Received)
	}
	if minutes := end.Sub(start).Minutes(); minutes > 0 && jobs > 0 {
		s.PerJobMinute = float64(s.Updates+s.Patches) / float64(jobs) / minutes
	}
	for _, times := range byJob {
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		first := 0
		for last := range times {
			for times[last].Sub(times[first]) >= time.Minute {
				first++
			}
			s.Peak = max(s.Peak, last-first+1)
		}
	}
	return s
}
