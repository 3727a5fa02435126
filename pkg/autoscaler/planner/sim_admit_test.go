package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// gangCycle is cycle with gang admission: the queued jobs go to Decide, the
// admitted ones lose their gates, and a job is planned (Running) once its
// pservers and min trainers are bound.
func (s *sim) gangCycle() []ScaleAction {
	for _, j := range s.jobs {
		if !j.queued && !j.running && s.minimumBound(j) {
			j.running = true
		}
	}
	snap, jobs := s.snapshot()
	var queue []QueuedJob
	for _, j := range s.jobs {
		if j.queued {
			queue = append(queue, QueuedJob{Key: j.key, Priority: j.priority, Created: t0.Add(time.Duration(j.created) * time.Second),
				Pods: []PodSet{{Role: "pserver", Count: j.pservers, Request: j.psReq.resources(), Placement: j.placement},
					{Role: "trainer", Count: j.min, Request: j.req.resources(), Placement: j.placement}}})
		}
	}
	d := Decide(snap, jobs, Queue{Jobs: queue}, s.opts)
	s.admitted = len(d.Admitted) > 0
	s.check(snap, jobs, d.Actions)
	s.admitted = false
	s.lastAdmitted = len(d.Admitted)
	for _, a := range d.Admitted {
		j := s.job(a.Job)
		j.queued = false
		for _, p := range s.pods {
			if p.job == j || p.member == j {
				p.gated = false
			}
		}
		s.seen["admitted"]++
	}
	for _, a := range d.Actions {
		s.seen[string(a.Cause)]++
		j := s.job(a.Job)
		s.mark(a)
		j.replicas = a.To
		if a.StartsCoolDown() {
			j.scaleDown = s.now()
		}
	}
	return d.Actions
}

// minimumBound: the job's pservers and min trainers are bound.
func (s *sim) minimumBound(j *simJob) bool {
	var trainers, pservers int32
	for _, p := range s.pods {
		if p.node == "" || p.deleteAt != 0 {
			continue
		}
		switch {
		case p.job == j:
			trainers++
		case p.member == j:
			pservers++
		}
	}
	return trainers >= j.min && pservers >= j.pservers
}

// gangEvent: jobs are submitted and finish.
func (s *sim) gangEvent() {
	r := s.rng
	switch k := r.Intn(10); {
	case k < 3 && len(s.jobs) < 8:
		s.addJob()
	case k < 5 && len(s.jobs) > 0:
		j := s.jobs[r.Intn(len(s.jobs))]
		for _, p := range s.pods {
			if (p.job == j || p.member == j) && p.deleteAt == 0 {
				s.remove(p)
			}
		}
		s.jobs = slices.DeleteFunc(s.jobs, func(o *simJob) bool { return o == j })
	}
}

// checkGangFixedPoint asserts, once the plans stopped changing anything,
// that no two jobs of one priority wait on each other half started (the
// deadlock gang admission prevents) — a job is half started only when
// kube-scheduler preempted its pods for a job of a higher priority — and
// that no queued job's minimum fits in the room left.
func (s *sim) checkGangFixedPoint() {
	s.t.Helper()
	free := map[string]vec{}
	for _, n := range s.nodes {
		free[n.name] = s.free(n)
	}
	half := map[int32]string{}
	for _, j := range s.jobs {
		if !j.queued {
			if s.minimumBound(j) {
				continue
			}
			if other, ok := half[j.priority]; ok {
				s.t.Fatalf("tick %d: jobs %s and %s of priority %d are both half started", s.tick, other, j.key, j.priority)
			}
			half[j.priority] = j.key
			if !slices.ContainsFunc(s.jobs, func(o *simJob) bool { return o.priority > j.priority && !o.queued }) {
				s.t.Fatalf("tick %d: admitted job %s is half started, and no job of a higher priority runs", s.tick, j.key)
			}
			continue
		}
		for _, p := range s.pods {
			if (p.job == j || p.member == j) && p.node != "" {
				s.t.Fatalf("tick %d: pod %s of queued job %s is bound", s.tick, p.name, j.key)
			}
		}
	}
	// In queue order: no queued job fits in the room left, the head's
	// reserved nodes left out for the jobs behind it.
	queue := slices.DeleteFunc(slices.Clone(s.jobs), func(j *simJob) bool { return !j.queued })
	slices.SortStableFunc(queue, func(a, b *simJob) int {
		return cmp.Or(cmp.Compare(b.priority, a.priority), cmp.Compare(a.created, b.created), cmp.Compare(a.key, b.key))
	})
	reserved := map[string]bool{}
	headSet := false
	for _, j := range queue {
		usable := func(n *simNode) bool { return !n.cordoned && !reserved[n.name] }
		if fits, _ := s.gangFits(j, free, usable); fits {
			s.t.Fatalf("tick %d: queued job %s fits in the room left and was not admitted", s.tick, j.key)
		}
		empty := map[string]vec{}
		for _, n := range s.nodes {
			empty[n.name] = n.alloc
		}
		if fits, _ := s.gangFits(j, empty, func(n *simNode) bool { return !n.cordoned }); fits && !headSet {
			headSet = true
			for _, n := range s.nodes {
				pod := &simPod{member: j}
				if s.mayRun(pod, n) && (j.req.fitsIn(n.alloc) || j.psReq.fitsIn(n.alloc)) {
					reserved[n.name] = true
				}
			}
		}
	}
}

// gangFits places a job's minimum first fit in room on the nodes usable
// allows.
func (s *sim) gangFits(j *simJob, free map[string]vec, usable func(*simNode) bool) (bool, map[string]vec) {
	room := maps.Clone(free)
	fits := true
	for _, set := range [][2]any{{j.pservers, j.psReq}, {j.min, j.req}} {
		for range set[0].(int32) {
			placed := false
			for _, n := range s.nodes {
				pod := &simPod{member: j}
				if usable(n) && s.mayRun(pod, n) && set[1].(vec).fitsIn(room[n.name]) {
					room[n.name] = room[n.name].minus(set[1].(vec))
					placed = true
					break
				}
			}
			fits = fits && placed
		}
	}
	return fits, room
}

// TestGangAdmissionOverManyCycles runs the simulated cluster with gang
// admission: jobs of one or two pservers and their min trainers are
// submitted queued and finish at random, beside jobs that started before
// (ungated). Every plan passes the multi-cycle checks, and once the inputs
// stop changing nothing is half started and no queued job would fit.
func TestGangAdmissionOverManyCycles(t *testing.T) {
	seeds := 40
	if *long {
		seeds = 2000
	}
	seen := map[string]int{}
	for seed := range int64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newSim(t, seed)
			s.gang = true
			s.run(120, 80, 5)
			s.checkGangFixedPoint()
			for k, v := range s.seen {
				seen[k] += v
			}
		})
	}
	t.Logf("admissions and actions over %d runs: %v", seeds, seen)
	for _, what := range []string{"admitted", string(CauseIdle), string(CauseMinimum)} {
		assert.Positive(t, seen[what], "no run exercised %q", what)
	}
}
