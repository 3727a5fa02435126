package planner

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// queueFrom decodes, from the fuzz input read backwards, a queue beside the
// scenario of scenarioFrom: queued jobs in three namespaces, quotas on CPU
// requests and pods (some below a minimum's hard need), the running jobs
// preemption may stop (the planned jobs and the other jobs' pods, and
// sometimes a Running job whose pods the snapshot does not hold yet),
// whether preemption is on, and whether the namespaces are teams.
func queueFrom(data []byte, snap *snapshot.Snapshot, jobs []Job, others []otherPod, opts *Options) Queue {
	rev := slices.Clone(data)
	slices.Reverse(rev)
	f := &fuzzBytes{b: rev}
	namespaces := []string{"ns", "team-a", "team-b"}
	priorities := []int32{-1, 0, 0, 10, 1000}
	placements := []*snapshot.Placement{nil, inPool("a"), inPool("b"), onGPUPool()}
	var q Queue
	for i := range f.intn(6) {
		job := QueuedJob{Key: fmt.Sprintf("%s/q%d", namespaces[f.intn(3)], i), Priority: priorities[f.intn(len(priorities))],
			Created: t0.Add(time.Duration(f.intn(5)) * time.Second)}
		pl := placements[f.intn(len(placements))]
		for _, role := range []string{"master", "pserver", "trainer"} {
			n := int32(f.intn(4))
			if role == "master" {
				n = int32(f.intn(2))
			}
			req := Resources{CPUMilli: int64(250 * f.intn(9)), MemoryMega: int64(512 * f.intn(5)), GPU: int64(f.intn(4) / 3)}
			lim := req
			lim.CPUMilli *= int64(1 + f.intn(2))
			job.Pods = append(job.Pods, PodSet{Role: role, Count: n, Request: req, Limits: lim, Placement: pl})
		}
		job.MaxTrainers = job.Pods[2].Count + int32(f.intn(8))
		q.Jobs = append(q.Jobs, job)
	}
	for _, ns := range namespaces {
		if f.intn(2) == 0 {
			hard := float64(f.intn(12))
			withQuota(snap, ns, hard-float64(f.intn(4)), hard, int64(f.intn(10)), 10)
		}
	}
	for _, j := range jobs {
		q.Running = append(q.Running, RunningJob{Key: j.Key, Priority: j.Priority, Created: t0.Add(time.Duration(f.intn(5)) * time.Second)})
	}
	for _, o := range others {
		if o.job != "" && o.node != "" && !o.terminating {
			if !slices.ContainsFunc(q.Running, func(r RunningJob) bool { return r.Key == o.job }) {
				q.Running = append(q.Running, RunningJob{Key: o.job, Priority: o.priority, Created: t0})
			}
			runningWhole(snap, o.job, o)
		}
	}
	opts.Preemption = f.intn(2) == 0
	if f.intn(2) == 0 {
		// The queued jobs' namespaces are teams too.
		opts.Teams = append(opts.Teams, Team{Name: "team-a", Namespaces: []string{"team-a"}, Weight: int32(1 + f.intn(4))},
			Team{Name: "team-b", Namespaces: []string{"team-b"}, Weight: int32(1 + f.intn(4)),
				Guarantee: Resources{CPUMilli: int64(1000 * f.intn(4))}})
	}
	if len(q.Jobs) > 0 && f.intn(3) == 0 {
		// The first was admitted by the last plan, its pods not created yet.
		q.Starting, q.Jobs = q.Jobs[:1], q.Jobs[1:]
	}
	for i := range f.intn(3) {
		// Admitted, not Running yet; some past their cool-down.
		q.Arriving = append(q.Arriving, ArrivingJob{Key: fmt.Sprintf("%s/arriving%d", namespaces[f.intn(3)], i),
			Priority: priorities[f.intn(len(priorities))], Min: int32(f.intn(3)), Max: int32(f.intn(12)),
			Admitted:  opts.Now.Add(-time.Duration(f.intn(40)) * time.Second),
			Request:   Resources{CPUMilli: int64(500 * f.intn(5)), MemoryMega: int64(512 * f.intn(3)), GPU: int64(f.intn(4) / 3)},
			Placement: placements[f.intn(len(placements))]})
	}
	if f.intn(4) == 0 {
		// Running, the newest, and none of its pods in the snapshot yet.
		q.Running = append(q.Running, RunningJob{Key: "ns/unseen", Priority: priorities[f.intn(len(priorities))],
			Created: t0.Add(time.Hour), MinPods: int32(1 + f.intn(3))})
	}
	return q
}

// FuzzQueue checks Decide's queue on random clusters, jobs and queues: every
// decision satisfies the queue's invariants (assertQueueInvariants: within
// quota, within the room, one head, preemption only of lower priorities) and
// the plan's (assertExplained); it mutates nothing and is deterministic; and
// the jobs behind the head change nothing for the head and the jobs ahead of
// it.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{})
	rng := rand.New(rand.NewSource(11))
	for range 16 {
		b := make([]byte, 60+rng.Intn(200))
		rng.Read(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, jobs, others, opts := scenarioFrom(data)
		snap := clusterOf(ns, jobs, others...)
		queue := queueFrom(data, &snap, jobs, others, &opts)
		// Some jobs a scoped quota cannot hold, some the API server would
		// refuse (a LimitRange bound, an unstated request a quota tracks):
		// the invariants require that none of them is admitted.
		for i := range queue.Jobs {
			if i >= len(data) {
				break
			}
			switch b := data[len(data)-1-i]; {
			case b%7 == 0:
				queue.Jobs[i].UncountedQuota, queue.Jobs[i].UncountedQuotaHard = "ResourceQuota scoped cannot hold it", b%2 == 0
			case b%11 == 0 && len(queue.Jobs[i].Pods) > 0:
				queue.Jobs[i].Pods = slices.Clone(queue.Jobs[i].Pods)
				queue.Jobs[i].Pods[0].Refused = "LimitRange bounds refuses it"
			}
		}
		wantSnap := snap.DeepCopy()
		wantQueue := Queue{Jobs: slices.Clone(queue.Jobs), Starting: slices.Clone(queue.Starting), Running: slices.Clone(queue.Running),
			Arriving: slices.Clone(queue.Arriving)}

		d := Decide(snap, jobs, queue, opts)
		assertQueueInvariants(t, snap, jobs, queue, opts, d)
		assertExplained(t, jobs, opts, d)
		require.Equal(t, wantSnap, snap, "Decide mutated the snapshot")
		require.Equal(t, wantQueue, queue, "Decide mutated the queue")
		require.Equal(t, d, Decide(snap, jobs, queue, opts), "Decide is not deterministic")
		if !opts.Preemption {
			assert.Empty(t, d.Preempted)
		}
		if i := slices.IndexFunc(queue.Running, func(r RunningJob) bool { return r.Key == "ns/unseen" }); i >= 0 && len(opts.Teams) == 0 {
			for _, p := range d.Preempted {
				assert.LessOrEqual(t, p.ByPriority, queue.Running[i].Priority,
					"%s stopped for %s while ns/unseen, of a lower priority, is Running and its pods are not in the snapshot", p.Job, p.By)
			}
		}
		for _, a := range queue.Arriving {
			_, acted := actionFor(d.Actions, a.Key)
			assert.False(t, acted, "an arriving job %s got an action", a.Key)
		}
		for _, a := range d.Admitted {
			_, acted := actionFor(d.Actions, a.Job)
			assert.False(t, acted, "a job admitted by this plan, %s, got an action", a.Job)
		}

		// The head's fate and that of the jobs ahead of it do not depend on
		// the jobs behind it.
		head := slices.IndexFunc(d.Waiting, func(w Waiting) bool { return w.Head })
		if head < 0 {
			return
		}
		order := queueOrder(queue.Jobs)
		if len(opts.Teams) > 0 {
			// With teams the line interleaves the teams by their use: the
			// jobs behind each head in its own team's line change nothing
			// for it.
			for _, w := range d.Waiting {
				if !w.Head {
					continue
				}
				team := teamNameOf(opts, w.Job)
				var without []QueuedJob
				behind := false
				for _, i := range order {
					q := queue.Jobs[i]
					if !behind || teamNameOf(opts, q.Key) != team {
						without = append(without, q)
					}
					behind = behind || q.Key == w.Job
				}
				short := Decide(snap, jobs, Queue{Jobs: without, Starting: queue.Starting, Running: queue.Running, Arriving: queue.Arriving}, opts)
				assert.Contains(t, waitingKeys(short), w.Job, "the jobs behind %s in its team's line changed its fate", w.Job)
			}
			return
		}
		var upTo []QueuedJob
		for _, i := range order {
			upTo = append(upTo, queue.Jobs[i])
			if queue.Jobs[i].Key == d.Waiting[head].Job {
				break
			}
		}
		short := Decide(snap, jobs, Queue{Jobs: upTo, Starting: queue.Starting, Running: queue.Running, Arriving: queue.Arriving}, opts)
		assert.ElementsMatch(t, admittedKeys(short), slices.DeleteFunc(admittedKeys(d), func(k string) bool {
			return !slices.ContainsFunc(upTo, func(q QueuedJob) bool { return q.Key == k })
		}), "the jobs behind the head changed who ahead of it is admitted")
		assert.Contains(t, waitingKeys(short), d.Waiting[head].Job, "the jobs behind the head changed its fate")
	})
}
