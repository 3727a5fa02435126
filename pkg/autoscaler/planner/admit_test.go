package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

type queuedMutator func(*QueuedJob)

// queued returns a queued job created at t0 + age with one 1-CPU pserver
// and 2 trainers of 1 CPU / 1 GiB.
func queued(key string, age time.Duration, muts ...queuedMutator) QueuedJob {
	q := QueuedJob{Key: key, Created: t0.Add(age), Pods: []PodSet{
		{Role: "pserver", Count: 1, Request: res(1, 1, 0)},
		{Role: "trainer", Count: 2, Request: res(1, 1, 0)},
	}}
	for _, m := range muts {
		m(&q)
	}
	return q
}

func queuedPriority(p int32) queuedMutator { return func(q *QueuedJob) { q.Priority = p } }

// gang sets the job's pods: a master when master is set, pservers and
// trainers of the given requests.
func gang(master bool, pservers int32, ps Resources, trainers int32, tr Resources) queuedMutator {
	return func(q *QueuedJob) {
		q.Pods = nil
		if master {
			q.Pods = append(q.Pods, PodSet{Role: "master", Count: 1, Request: res(1, 1, 0)})
		}
		q.Pods = append(q.Pods, PodSet{Role: "pserver", Count: pservers, Request: ps},
			PodSet{Role: "trainer", Count: trainers, Request: tr})
	}
}

func placedAt(pl *snapshot.Placement) queuedMutator {
	return func(q *QueuedJob) {
		for i := range q.Pods {
			q.Pods[i].Placement = pl
		}
	}
}

func admittedKeys(d Decision) []string {
	var out []string
	for _, a := range d.Admitted {
		out = append(out, a.Job)
	}
	return out
}

func waitingKeys(d Decision) []string {
	var out []string
	for _, w := range d.Waiting {
		out = append(out, w.Job)
	}
	return out
}

// gangOnNodes returns the queued job's minimum as pods bound first-fit on
// the nodes, as kube-scheduler would place them once the gates are gone.
func gangOnNodes(q QueuedJob, ns []nodeSpec, others []otherPod) []otherPod {
	free := map[string]Resources{}
	for _, n := range ns {
		free[n.name] = n.alloc
	}
	for _, o := range others {
		if o.node != "" {
			f := free[o.node]
			free[o.node] = (vecOf(f).minus(vecOf(o.req))).resources()
		}
	}
	var out []otherPod
	for _, s := range q.Pods {
		for i := range s.Count {
			for _, n := range ns {
				f := free[n.name]
				if s.Request.CPUMilli <= f.CPUMilli && s.Request.MemoryMega <= f.MemoryMega && s.Request.GPU <= f.GPU {
					free[n.name] = (vecOf(f).minus(vecOf(s.Request))).resources()
					out = append(out, otherPod{name: fmt.Sprintf("%s-%s-%d", q.Key, s.Role, i), node: n.name, req: s.Request,
						priority: q.Priority, job: q.Key, notTrainer: true})
					break
				}
			}
		}
	}
	return out
}

func TestDecideAdmitsInOrderOfPriorityThenAge(t *testing.T) {
	ns := nodes("n", 1, res(4, 64, 0)) // room for one job of 3 CPU
	queue := []QueuedJob{
		queued("ns/old-low", 0),
		queued("ns/young-high", 2*time.Minute, queuedPriority(100)),
		queued("ns/young-low", time.Minute),
	}
	d := Decide(clusterOf(ns, nil), nil, Queue{Jobs: queue}, Options{Now: t0})
	assert.Equal(t, []string{"ns/young-high"}, admittedKeys(d), "the highest priority first, though youngest")
	assert.Equal(t, []string{"ns/old-low", "ns/young-low"}, waitingKeys(d), "then the oldest")
	require.Len(t, d.Waiting, 2)
	assert.Equal(t, 1, d.Waiting[0].Position)
	assert.Equal(t, 2, d.Waiting[1].Of)
	assert.Contains(t, d.Waiting[0].Reason, "position 1 of 2 in the queue")

	// With the high job gone and room for two, the two low ones go in age
	// order: both fit.
	d = Decide(clusterOf(nodes("n", 2, res(4, 64, 0)), nil), nil, Queue{Jobs: queue[:1:1]}, Options{Now: t0})
	assert.Equal(t, []string{"ns/old-low"}, admittedKeys(d))
	assert.Empty(t, d.Waiting)
	assert.Contains(t, d.Admitted[0].Reason, "its minimum, 1 pserver, 2 trainers, needs 3 CPU, 3072 MiB memory, 0 GPU and fits on 1 node")
}

func TestDecideKeepsAJobWhoseMinimumDoesNotFitGated(t *testing.T) {
	// 3 nodes of 10 CPU, 1 used on two, the third full: 9 CPU the most
	// free. The job needs a master, 2 pservers of 1 CPU and 5 trainers of
	// 3.5 CPU, which fit on the empty nodes, not beside what runs.
	ns := nodes("n", 3, res(10, 64, 0))
	others := []otherPod{{name: "a", node: "n-0", req: res(1, 1, 0)}, {name: "b", node: "n-1", req: res(1, 1, 0)},
		{name: "c", node: "n-2", req: res(10, 1, 0)}}
	q := queued("ns/big", 0, gang(true, 2, res(1, 1, 0), 3, res(3.5, 1, 0)))
	q.Pods[2].Count = 5 // 17.5 + 3 = 20.5 CPU > 18 free
	d := Decide(clusterOf(ns, nil, others...), nil, Queue{Jobs: []QueuedJob{q}}, Options{Now: t0})
	assert.Empty(t, d.Admitted)
	require.Len(t, d.Waiting, 1)
	assert.Equal(t, v1.ReasonWaitingForAdmission, d.Waiting[0].Kind)
	assert.True(t, d.Waiting[0].Head, "the head of the queue")
	r := d.Waiting[0].Reason
	assert.Contains(t, r, "position 1 of 1 in the queue: its minimum, 1 master, 2 pservers, 5 trainers, needs 20.5 CPU, 8192 MiB memory, 0 GPU")
	assert.Contains(t, r, "the nodes a trainer (3.5 CPU, 1024 MiB memory, 0 GPU) may use have at most 9 CPU, 64512 MiB memory, 0 GPU free on one node, 18 CPU, 193536 MiB memory, 0 GPU in all")

	// Nothing was taken for it: an elastic job grows into all the room.
	grower := newJob("ns/e", withRange(1, 20), runningOn("n-0"))
	d = Decide(clusterOf(ns, []Job{grower}, others...), []Job{grower}, Queue{Jobs: []QueuedJob{q}}, Options{Now: t0})
	assert.Empty(t, d.Admitted)
	assert.Equal(t, int32(17), toOf(d.Actions, grower), "29 CPU of requests ≤ 0.97 × 30")

	// On two such nodes it could never start: it waits without a reservation.
	d = Decide(clusterOf(ns[:2], nil, others[:2]...), nil, Queue{Jobs: []QueuedJob{q}}, Options{Now: t0})
	require.Len(t, d.Waiting, 1)
	assert.Equal(t, v1.ReasonUnplaceable, d.Waiting[0].Kind)
	assert.False(t, d.Waiting[0].Head)
	assert.Contains(t, d.Waiting[0].Reason, "the 2 nodes its pods may use could not hold them all even empty (20 CPU")
}

func TestDecideAdmitsOneOfTwoJobsThatFitOnlyAlone(t *testing.T) {
	// Each job needs 5 CPU; the cluster has 8. The older is admitted, the
	// younger waits whole: none of its pods takes room, so nothing waits on
	// anything half-started.
	ns := nodes("n", 2, res(4, 64, 0))
	a := queued("ns/a", 0, gang(false, 1, res(1, 1, 0), 2, res(2, 1, 0)))
	b := queued("ns/b", time.Second, gang(false, 1, res(1, 1, 0), 2, res(2, 1, 0)))
	d := Decide(clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{b, a}}, Options{Now: t0})
	assert.Equal(t, []string{"ns/a"}, admittedKeys(d))
	assert.Equal(t, []string{"ns/b"}, waitingKeys(d))

	// Once a's pods run, b still waits: its minimum does not fit in what is
	// left, and a is not elastic above its minimum.
	running := gangOnNodes(a, ns, nil)
	require.Len(t, running, 3)
	d = Decide(clusterOf(ns, nil, running...), nil, Queue{Jobs: []QueuedJob{b}}, Options{Now: t0})
	assert.Empty(t, d.Admitted)
	assert.Empty(t, d.Actions)

	// When a is deleted, b is admitted.
	d = Decide(clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{b}}, Options{Now: t0})
	assert.Equal(t, []string{"ns/b"}, admittedKeys(d))
}

func TestDecideBackfillsBehindAJobThatDoesNotFit(t *testing.T) {
	ns := nodes("n", 1, res(4, 64, 0))
	big := queued("ns/big", 0, gang(false, 1, res(1, 1, 0), 4, res(1, 1, 0)))
	small := queued("ns/small", time.Second)
	d := Decide(clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{big, small}}, Options{Now: t0})
	assert.Equal(t, []string{"ns/small"}, admittedKeys(d))
	require.Len(t, d.Waiting, 1)
	assert.Equal(t, "ns/big", d.Waiting[0].Job)
	assert.Contains(t, d.Waiting[0].Reason, "needs 5 CPU")
}

func TestDecideAdmissionTakesTrainersAboveOtherJobsMinimums(t *testing.T) {
	ns := nodes("n", 2, res(8, 64, 0))
	full := func(prio int32) Job {
		return newJob("ns/low", withRange(2, 16), withPriority(prio), spread(16, ns))
	}
	for _, tt := range []struct {
		name     string
		low      int32
		high     int32
		cause    Cause
		admitted bool
	}{
		{name: "a job of a higher priority", low: 0, high: 100, cause: CausePriority, admitted: true},
		{name: "a job of the same priority (the minimum rule)", low: 0, high: 0, cause: CauseMinimum, admitted: true},
		{name: "never from a job of a higher priority", low: 100, high: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			low := full(tt.low)
			jobs := []Job{low}
			snap := clusterOf(ns, jobs)
			q := queued("ns/new", 0, queuedPriority(tt.high)) // 3 CPU
			opts := Options{Now: t0, MaxLoadDesired: 1}
			d := Decide(snap, jobs, Queue{Jobs: []QueuedJob{q}}, opts)
			assertWellFormed(t, snap, jobs, opts, d.Actions)
			if !tt.admitted {
				assert.Empty(t, d.Admitted)
				assert.Empty(t, d.Actions)
				return
			}
			assert.Equal(t, []string{"ns/new"}, admittedKeys(d))
			assert.Contains(t, d.Admitted[0].Reason, "once 3 trainers above other jobs' minimums give way")
			act, ok := actionFor(d.Actions, "ns/low")
			require.True(t, ok)
			assert.Equal(t, int32(13), act.To, "3 trainers of 1 CPU make room for 3 CPU")
			assert.Equal(t, tt.cause, act.Cause)
			assert.Contains(t, act.Reason, "the minimum of queued 1 job (ns/new) needs 3 CPU, 3072 MiB memory, 0 GPU; trainers above this job's minimum make room for it on")
		})
	}
}

func TestDecideTakesNothingForAJobThatDoesNotFitWhole(t *testing.T) {
	// low runs 16 trainers on two 8-CPU nodes, min 12: 4 CPU above its
	// minimum. The queued job needs 6 CPU: its pserver and a trainer would
	// fit in what low gives, its whole minimum would not, so low keeps all
	// its trainers.
	ns := nodes("n", 2, res(8, 64, 0))
	low := newJob("ns/low", withRange(12, 16), spread(16, ns))
	jobs := []Job{low}
	snap := clusterOf(ns, jobs)
	q := queued("ns/new", 0, gang(false, 2, res(1, 1, 0), 4, res(1, 1, 0)))
	opts := Options{Now: t0, MaxLoadDesired: 1}
	d := Decide(snap, jobs, Queue{Jobs: []QueuedJob{q}}, opts)
	assert.Empty(t, d.Admitted)
	assert.Empty(t, d.Actions, "a gang that does not fit whole takes nothing")
	require.Len(t, d.Waiting, 1)
	assert.Contains(t, d.Waiting[0].Reason, "not even where trainers above other jobs' minimums could give way")

	// A second queued job that would fit in the 4 CPU low gives waits: the
	// room is the head's, which needs it and more.
	small := queued("ns/small", time.Second, gang(false, 1, res(1, 1, 0), 3, res(1, 1, 0)))
	d = Decide(snap, jobs, Queue{Jobs: []QueuedJob{q, small}}, opts)
	assert.Empty(t, d.Admitted)
	assert.Empty(t, d.Actions)
	require.Len(t, d.Waiting, 2)
	assert.True(t, d.Waiting[0].Head)
	assert.Contains(t, d.Waiting[1].Reason, "position 2 of 2 in the queue")

	// Alone, it is admitted.
	d = Decide(snap, jobs, Queue{Jobs: []QueuedJob{small}}, opts)
	assert.Equal(t, []string{"ns/small"}, admittedKeys(d))
	assert.Equal(t, int32(12), toOf(d.Actions, low))
}

func TestDecideAdmitsOnlyOntoNodesTheJobMayUse(t *testing.T) {
	gpu := nodeSpec{name: "gpu-0", alloc: res(16, 64, 4), labels: map[string]string{"pool": "gpu"},
		taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}}
	cpu := nodeSpec{name: "cpu-0", alloc: res(2, 64, 0), labels: map[string]string{"pool": "cpu"}}
	ns := []nodeSpec{cpu, gpu}
	q := queued("ns/j", 0) // 3 CPU, no toleration: only cpu-0, which has 2
	d := Decide(clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{q}}, Options{Now: t0})
	assert.Empty(t, d.Admitted, "the tainted node's room is not the job's")
	require.Len(t, d.Waiting, 1)
	assert.Equal(t, v1.ReasonUnplaceable, d.Waiting[0].Kind)
	assert.Contains(t, d.Waiting[0].Reason, "the 1 node its pods may use could not hold them all even empty (2 CPU")

	tol := snapshot.PlacementOf(&corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}})
	d = Decide(clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{queued("ns/j", 0, placedAt(tol))}}, Options{Now: t0})
	assert.Equal(t, []string{"ns/j"}, admittedKeys(d))

	sel := snapshot.PlacementOf(&corev1.PodSpec{NodeSelector: map[string]string{"pool": "none"}})
	d = Decide(clusterOf(ns, nil), nil, Queue{Jobs: []QueuedJob{queued("ns/j", 0, placedAt(sel))}}, Options{Now: t0})
	require.Len(t, d.Waiting, 1)
	assert.Contains(t, d.Waiting[0].Reason, "may run on no node")
}

func TestDecideWithholdsAdmittedRoomFromGrowth(t *testing.T) {
	ns := nodes("n", 1, res(10, 64, 0))
	e := newJob("ns/e", withRange(1, 20), runningOn("n-0"))
	jobs := []Job{e}
	q := queued("ns/q", 0) // 3 CPU
	d := Decide(clusterOf(ns, jobs), jobs, Queue{Jobs: []QueuedJob{q}}, Options{Now: t0})
	assert.Equal(t, []string{"ns/q"}, admittedKeys(d))
	assert.Equal(t, int32(6), toOf(d.Actions, e), "1 + 5 trainers and the 3 CPU admitted: 9 CPU ≤ 9.7")
}

func TestDecideWaitsForPodsThatWaitFirst(t *testing.T) {
	// An unschedulable pod of a running job below its minimum comes before
	// the queue: the room it will take is not admitted to anyone.
	ns := nodes("n", 1, res(4, 64, 0))
	others := []otherPod{{name: "p", priority: 0, req: res(2, 1, 0), job: "ns/started", notTrainer: true}}
	d := Decide(clusterOf(ns, nil, others...), nil, Queue{Jobs: []QueuedJob{queued("ns/q", 0)}}, Options{Now: t0})
	assert.Empty(t, d.Admitted)
}

func TestDecideWithoutQueueIsPlan(t *testing.T) {
	for _, tc := range planCases() {
		t.Run(tc.name, func(t *testing.T) {
			snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
			opts := tc.opts
			if opts.Now.IsZero() {
				opts.Now = t0
			}
			d := Decide(snap, tc.jobs, Queue{}, opts)
			assert.Equal(t, Plan(snap, tc.jobs, opts), d.Actions)
			assert.Empty(t, d.Admitted)
			assert.Empty(t, d.Waiting)
		})
	}
}

func TestDecideIsPureAndDeterministic(t *testing.T) {
	ns := nodes("n", 3, res(8, 64, 0))
	low := newJob("ns/low", withRange(2, 20), spread(20, ns))
	jobs := []Job{low}
	snap := clusterOf(ns, jobs)
	queue := []QueuedJob{
		queued("ns/a", 0, queuedPriority(10)),
		queued("ns/b", time.Second, gang(true, 2, res(1, 1, 0), 4, res(2, 1, 0))),
		queued("ns/c", 2*time.Second, gang(false, 1, res(1, 1, 0), 30, res(1, 1, 0))),
		queued("ns/a", 3*time.Second), // a duplicate: the first counts
	}
	snapCopy, jobsCopy := snap.DeepCopy(), append([]Job(nil), jobs...)
	queueCopy := append([]QueuedJob(nil), queue...)
	first := Decide(snap, jobs, Queue{Jobs: queue}, Options{Now: t0})
	assert.Equal(t, snapCopy, snap)
	assert.Equal(t, jobsCopy, jobs)
	assert.Equal(t, queueCopy, queue)
	assert.Equal(t, first, Decide(snap, jobs, Queue{Jobs: queue}, Options{Now: t0}))
	assert.Equal(t, []string{"ns/a", "ns/b"}, admittedKeys(first))
	assert.Equal(t, []string{"ns/c"}, waitingKeys(first))
}

// BenchmarkDecide is BenchmarkPlan's cluster with 200 queued jobs of 1 to
// 40 trainers of 2 CPU and two 1-CPU pservers each: the first fit in the
// idle room, later ones only by taking trainers above other jobs'
// minimums, the rest wait (every one that waits is tried with evictions).
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			snap, jobs := benchScenario(n)
			queue := make([]QueuedJob, 200)
			for k := range queue {
				queue[k] = queued(fmt.Sprintf("ns/q-%03d", k), time.Duration(k)*time.Second, queuedPriority(int32(k%3)),
					gang(false, 2, res(1, 2, 0), int32(1+k%40), res(2, 4, 0)))
			}
			d := Decide(snap, jobs, Queue{Jobs: queue}, Options{})
			b.ReportAllocs()
			b.ResetTimer()
			before := cpuTime()
			for range b.N {
				Decide(snap, jobs, Queue{Jobs: queue}, Options{})
			}
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(d.Admitted)), "admitted")
			b.ReportMetric(float64(len(d.Actions)), "actions")
		})
	}
}
