package planner

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// assertQueueInvariants checks what every decision on a queue must satisfy:
// each queued job is admitted or waits, once; admissions stay within each
// namespace's quota and within the room the nodes have; a job that could
// never start holds no reservation and at most one job of each team is the
// head; and preemption stops only running jobs of a strictly lower priority
// than an admitted job, only when it is on, and a job of another team only
// for a team with a guarantee.
func assertQueueInvariants(t *testing.T, snap snapshot.Snapshot, jobs []Job, queue Queue, opts Options, d Decision) {
	t.Helper()
	byKey := map[string]*QueuedJob{}
	for i := range queue.Jobs {
		if _, dup := byKey[queue.Jobs[i].Key]; !dup {
			byKey[queue.Jobs[i].Key] = &queue.Jobs[i]
		}
	}
	seen := map[string]bool{}
	admitted := map[string]bool{}
	for _, a := range d.Admitted {
		require.NotNil(t, byKey[a.Job], "admitted %s was not queued", a.Job)
		require.False(t, seen[a.Job], "%s decided twice", a.Job)
		seen[a.Job], admitted[a.Job] = true, true
		assert.Empty(t, refused(byKey[a.Job]), "%s admitted though the API server would refuse its pods", a.Job)
		assert.Empty(t, byKey[a.Job].UncountedQuota, "%s admitted though a scoped quota cannot hold its minimum", a.Job)
	}
	heads := map[string]int{}
	for k, w := range d.Waiting {
		require.NotNil(t, byKey[w.Job], "waiting %s was not queued", w.Job)
		require.False(t, seen[w.Job], "%s decided twice", w.Job)
		seen[w.Job] = true
		assert.Equal(t, k+1, w.Position)
		assert.Equal(t, len(d.Waiting), w.Of)
		assert.Contains(t, []string{v1.ReasonWaitingForAdmission, v1.ReasonWaitingForQuota, v1.ReasonExceedsQuota,
			v1.ReasonUnplaceable, v1.ReasonReservedForHead, v1.ReasonWillBeRefused}, w.Kind, w.Job)
		if w.Head {
			heads[teamNameOf(opts, w.Job)]++
			assert.Equal(t, v1.ReasonWaitingForAdmission, w.Kind, "%s: the head waits for room on nodes", w.Job)
		}
	}
	for team, n := range heads {
		assert.LessOrEqual(t, n, 1, "one head for team %q", team)
	}
	assert.Len(t, seen, len(byKey), "every queued job is decided")

	// Quota: what the admitted minimums take fits what each namespace's
	// quotas leave, with what the plan's scale-downs of the namespace's jobs
	// give back, and no admitted minimum is above a hard limit.
	jobByKey := map[string]Job{}
	for _, j := range jobs {
		jobByKey[j.Key] = j
	}
	used := map[string]quotaUse{}
	for key := range admitted {
		ns := namespaceOf(key)
		u := used[ns]
		for _, s := range byKey[key].Pods {
			n := int64(max(s.Count, 0))
			u.pods += n
			for range n {
				u.req, u.lim = u.req.plus(vecOf(s.Request)), u.lim.plus(vecOf(s.Limits))
			}
		}
		used[ns] = u
	}
	for ns, u := range used {
		left, hard := snap.Quota(ns), snap.HardQuota(ns)
		usedNow := hard
		for _, dim := range quotaDims {
			if h, l := *dim.of(&hard), *dim.of(&left); h != snapshot.Unlimited && l != snapshot.Unlimited {
				*dim.of(&usedNow) = max(0, h-l)
			}
		}
		for _, a := range d.Actions {
			j, ok := jobByKey[a.Job]
			if !ok || namespaceOf(a.Job) != ns || a.To >= a.From {
				continue
			}
			for range a.From - a.To {
				refund(&left, vecOf(j.Request), vecOf(j.Limits), &usedNow)
			}
		}
		for _, dim := range quotaDims {
			if l := *dim.of(&left); l != snapshot.Unlimited {
				assert.LessOrEqual(t, dim.amount(u), l, "namespace %s: admissions exceed quota %s", ns, dim.name)
			}
			if h := *dim.of(&hard); h != snapshot.Unlimited {
				assert.LessOrEqual(t, dim.amount(u), h, "namespace %s: admissions exceed the hard limit of %s", ns, dim.name)
			}
		}
	}

	// Nodes: the admitted minimums fit in the free room plus what the plan
	// frees (scale-downs, preempted jobs, pods going), in sum.
	var room, need vec
	for _, n := range snap.Nodes {
		room = room.plus(vecOf(n.Free).max0())
		for _, tp := range n.Terminating {
			room = room.plus(vecOf(tp.Request))
		}
	}
	for _, j := range jobs {
		// Trainers a scale-down removes, or the ReplicaSet is removing
		// already (more pods than replicas), at most the largest each.
		gone := int64(max(0, len(j.Trainers)-int(j.Current)))
		if a, ok := actionFor(d.Actions, j.Key); ok && a.To < a.From {
			gone += int64(a.From - a.To)
		}
		largest := vecOf(j.Request)
		for _, tp := range j.Trainers {
			for r := range numRes {
				largest[r] = max(largest[r], vecOf(tp.Request)[r])
			}
		}
		room = room.plus(largest.times(gone))
	}
	running := map[string]RunningJob{}
	for _, r := range queue.Running {
		running[r.Key] = r
	}
	for _, p := range d.Preempted {
		r, ok := running[p.Job]
		require.True(t, ok, "preempted %s is not a running job", p.Job)
		assert.True(t, admitted[p.By], "%s preempted for %s, which was not admitted", p.Job, p.By)
		assert.Less(t, r.Priority, byKey[p.By].Priority, "%s of priority %d preempted for %s of priority %d", p.Job, r.Priority, p.By, byKey[p.By].Priority)
		if by := teamNameOf(opts, p.By); by != teamNameOf(opts, p.Job) {
			i := slices.IndexFunc(opts.Teams, func(tm Team) bool { return tm.Name == by })
			assert.True(t, i >= 0 && !opts.Teams[i].Guarantee.IsZero(), "%s of team %q stopped for %s of team %q, which has no guarantee", p.Job, teamNameOf(opts, p.Job), p.By, by)
		}
		assert.True(t, d.Preempted[0].ByPriority > p.Priority || p.By != d.Preempted[0].By)
		for _, tp := range append(snap.Trainers[p.Job], snap.Servers[p.Job]...) {
			if tp.Node != "" {
				room = room.plus(vecOf(tp.Request))
			}
		}
	}
	if len(queue.Running) == 0 || len(byKey) == 0 {
		assert.Empty(t, d.Preempted)
	}
	for key := range admitted {
		for _, s := range byKey[key].Pods {
			need = need.plus(vecOf(s.Request).times(int64(max(s.Count, 0))))
		}
	}
	for r := range numRes {
		assert.LessOrEqual(t, need[r], room[r], "admitted minimums need more %s than is free or freed", resNames[r])
	}
}

func (v vec) times(n int64) vec { return vec{v[0] * n, v[1] * n, v[2] * n} }

// TestTheHeadIsNotStarvedByAStreamOfSmallJobs runs a queue over many
// cycles: a big job waits behind running jobs while small jobs arrive every
// cycle. Each cycle the big job is admitted as soon as the free room holds
// it — the bound: small jobs behind it never take room it could use — and
// a job that fits is admitted whatever the order. Without the reservation,
// the small jobs would keep it waiting for good.
func TestTheHeadIsNotStarvedByAStreamOfSmallJobs(t *testing.T) {
	for seed := range int64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			ns := nodes("n", 3, res(8, 64, 0))
			type runner struct {
				key  string
				pods []otherPod
				ends int
			}
			var running []runner
			free := map[string]float64{"n-0": 8, "n-1": 8, "n-2": 8}
			place := func(key string, cpus []float64, ends int) bool {
				rn := runner{key: key, ends: ends}
				trial := map[string]float64{"n-0": free["n-0"], "n-1": free["n-1"], "n-2": free["n-2"]}
				for i, c := range cpus {
					placed := false
					for _, n := range []string{"n-0", "n-1", "n-2"} {
						if trial[n] >= c {
							trial[n] -= c
							rn.pods = append(rn.pods, otherPod{name: fmt.Sprintf("%s-%d", key, i), node: n, req: res(c, 1, 0)})
							placed = true
							break
						}
					}
					if !placed {
						return false
					}
				}
				free = trial
				running = append(running, rn)
				return true
			}
			for i := range 4 {
				require.True(t, place(fmt.Sprint("ns/old", i), []float64{4, 1}, 5+r.Intn(20)))
			}
			big := queued("ns/big", 0, gang(false, 2, res(2, 1, 0), 4, res(3, 1, 0))) // 16 CPU, pods of 3 and 2
			queue := []QueuedJob{big}
			admittedAt := -1
			for cycle := range 80 {
				// Jobs end.
				kept := running[:0]
				for _, rn := range running {
					if rn.ends == cycle {
						for _, p := range rn.pods {
							free[p.node] += float64(p.req.CPUMilli) / 1000
						}
						continue
					}
					kept = append(kept, rn)
				}
				running = kept
				// Small jobs arrive.
				for range 1 + r.Intn(2) {
					queue = append(queue, queued(fmt.Sprintf("ns/small-%d-%d", cycle, len(queue)), timeOf(cycle), gang(false, 1, res(1, 1, 0), 1, res(1, 1, 0))))
				}
				var others []otherPod
				for _, rn := range running {
					others = append(others, rn.pods...)
				}
				bigFits := admittedAt < 0 && fitsFirst([]float64{3, 3, 3, 3, 2, 2}, free)
				snap := clusterOf(ns, nil, others...)
				d := decideQueue(t, snap, nil, Queue{Jobs: queue}, Options{Now: t0})
				admitted := map[string]bool{}
				for _, a := range d.Admitted {
					admitted[a.Job] = true
				}
				if bigFits {
					require.True(t, admitted["ns/big"], "cycle %d: the free room holds the big job and it was not admitted", cycle)
				}
				kept2 := queue[:0]
				for _, q := range queue {
					if !admitted[q.Key] {
						kept2 = append(kept2, q)
						continue
					}
					var cpus []float64
					for _, s := range q.Pods {
						for range s.Count {
							cpus = append(cpus, float64(s.Request.CPUMilli)/1000)
						}
					}
					if q.Key == "ns/big" {
						admittedAt = cycle
					}
					require.True(t, place(q.Key, cpus, cycle+3+r.Intn(10)), "cycle %d: admitted %s does not fit", cycle, q.Key)
				}
				queue = kept2
			}
			require.GreaterOrEqual(t, admittedAt, 0, "the big job was never admitted")
			assert.LessOrEqual(t, admittedAt, 25, "admitted once the jobs running when it arrived have ended")
		})
	}
}

func timeOf(cycle int) time.Duration { return time.Duration(cycle+1) * time.Second }

// fitsFirst places the requests first fit, largest first, in free.
func fitsFirst(cpus []float64, free map[string]float64) bool {
	trial := map[string]float64{}
	for k, v := range free {
		trial[k] = v
	}
	for _, c := range cpus {
		placed := false
		for _, n := range []string{"n-0", "n-1", "n-2"} {
			if trial[n] >= c {
				trial[n] -= c
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

// teamNameOf is the team of a job's namespace; "" for the default team.
func teamNameOf(opts Options, job string) string {
	for _, tm := range opts.Teams {
		if slices.Contains(tm.Namespaces, namespaceOf(job)) {
			return tm.Name
		}
	}
	return ""
}
