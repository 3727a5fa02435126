package planner

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// planner is Plan's private working copy of the cluster and the jobs.
type plan struct {
	opts      Options
	threshold float64

	nodes   []snapshot.Node
	nodeIdx map[string]int32
	classes *classes
	// free is each node's room once the pods that are going have gone (pods
	// terminating, the trainers of a scale-down under way, and this plan's
	// removals), less what this plan reserved or placed there. hold is the
	// part of it those pods still occupy: growth may use only free − hold,
	// pods that wait for a node may use all of free.
	free []vec
	hold []vec
	fit  *fitter // over free
	// grower finds room for growth: over free − hold, built once the
	// phases that reserve and remove are done.
	grower *fitter
	// emptyFit is over every node's allocatable, to tell a queued job that
	// could never start; built when first needed.
	emptyFit *fitter
	quotas   map[string]*snapshot.Quota // room left per namespace, as admission and growth use it (quotaFor)
	// quotaLeftToRefund is what each namespace's pods still use of its
	// quota as far as yieldQuota's refunds go ([plan.quotaUsed]).
	quotaLeftToRefund map[string]*snapshot.Quota
	stopped           map[string]bool // the jobs preemption stops whole in this plan
	snap              *snapshot.Snapshot

	// pools are the groups of nodes the load is tested over ([plan.buildPools]);
	// poolOf maps a class to its pool, and all is the whole cluster's
	// load, a pool of its own when there are several.
	pools  []pool
	poolOf []int32
	all    *pool

	// teams share the pools when Options.Teams names any ([plan.buildTeams]);
	// teamOf maps a namespace to its team, defaultTeam has the others.
	teams       []*teamState
	teamOf      map[string]*teamState
	defaultTeam *teamState
	// clusterCap is every node's allocatable, summed, with teams.
	clusterCap vec

	jobs    []*jobState
	byKey   map[string]*jobState
	movable []*jobState
	minPrio int32    // lowest priority of a movable job
	cands   [][]slot // per-node scratch of the eviction search
	ranks   []int32  // per-node scratch of pickRunning
	ranked  []int32  // its nodes with a rank, to reset
	moves   []move   // victims reordered by picks, for restore
	// nodeEviction's scratch.
	evScratch                eviction
	costScratch, dropScratch []int32
	hopeless                 map[pendingShape]bool  // pending shapes no yield can fit
	depth                    map[pendingShape]int32 // search depth that made room for a shape
	anyTrainer               map[anyTrainerKey]bool // [plan.anyTrainerDoes]'s answers
	// waiting are the unschedulable pods the plan reserved room for or
	// made room for, for the reasons.
	waiting []*snapshot.PendingPod

	// For the explanations ([plan.explanations]): the jobs that cannot even be
	// accounted, the jobs cooling down that growth held room for, and the
	// largest room per placement and trainer shape.
	dropped  []*Job
	blockers []*jobState
	// arriving are the admitted jobs not Running yet that growth plans
	// for and keeps room for ([plan.arrive]).
	arriving []*jobState
	rooms    map[roomKey]nodeRoom
}

// jobState is the planner's private working copy of one job.
type jobState struct {
	in       *Job
	key      string
	min, max int64
	desired  int64
	priority int32
	req, lim vec
	movable  bool
	ns       string
	elig     *eligible // the nodes its trainers may use
	pool     *pool     // the pool of those nodes, whose load it tests
	team     *teamPool // its team's share of that pool, with teams

	victims []victim
	next    int   // victims[:next] are gone (or being deleted already)
	gone    int   // victims[:gone] were being deleted already before the plan
	runFrom int   // victims[runFrom:] run: any of them may be picked ([plan.pickRunning])
	placed  int64 // victims[next:] that hold a node, plus trainers grown

	unschedulable bool // a kept trainer is pending unschedulable
	starved       bool // a kept, not-yet-scheduled trainer fits on no node
	coolingDown   bool
	arriving      bool // admitted, not Running yet: in planner.arriving only
	quotaHeld     bool // growth stopped at its namespace's quota

	grown, shrunk int64
	nodes         []string
	picked        []string // running trainers removed out of deletion order (see [plan.pickRunning])

	// Each phase's scratch state, and what the reasons and explanations read of the plan.
	preemptState
	growState
	rebalanceState
	priceState // [plan.priceResizes]
	goodputState
	reasonNotes
}

// preemptState is the job's part in [plan.preempt].
type preemptState struct {
	// stopping is set while a trial of preemption counts the job's pods as
	// gone; preempted once the plan stops the job whole, for preemptedBy
	// (of priority preemptedByPriority).
	stopping, preempted bool
	preemptedBy         string
	preemptedByPriority int32
}

// growState is the job's part in [plan.grow]: why growth let the job go,
// for its explanation, and a cache.
type growState struct {
	stop       growStop
	fitAtStart bool      // growth could place one of its trainers before any job grew
	lostTo     *jobState // the job that took the last trainer before it left the line
	// passed is, under goodput, the job next in line when it got its
	// first trainer, with passedAt placed.
	passed   *jobState
	passedAt int64
	// unblockedSet caches the nodes no job cooling down ahead of it could
	// use, for unblockedFor blockers.
	unblockedFor int
	unblockedSet *eligible
}

// rebalanceState is the job's part in [plan.rebalance].
type rebalanceState struct {
	growsFromIdle bool      // growth can serve it from idle capacity: rebalance gives it nothing
	promised      int64     // trainers rebalance freed room for, added to desired in the same plan
	takerAt       int       // index in rebalance's heap of takers, -1 when not in it
	promisedBy    *jobState // the first job rebalance freed room for it from
	// capped is the giver whose trainer rebalance or reclaim would have moved
	// to it had the plan not reached cappedAt moves, phase cappedIn's limit.
	capped   *jobState
	cappedAt int32
	cappedIn string
}

func (j *jobState) slack() int64 { return j.desired - j.min }

// fulfillmentCmp compares (a.placed−a.min)/(a.max−a.min) with b's exactly.
func fulfillmentCmp(a, b *jobState) int { return fulfillmentAt(a, a.placed, b, b.placed) }

// fulfillmentAt compares a's fulfillment with aPlaced trainers placed to b's
// with bPlaced, exactly.
func fulfillmentAt(a *jobState, aPlaced int64, b *jobState, bPlaced int64) int {
	l := (aPlaced - a.min) * (b.max - b.min)
	r := (bPlaced - b.min) * (a.max - a.min)
	switch {
	case l < r:
		return -1
	case l > r:
		return 1
	}
	return 0
}

func (j *jobState) fulfillment() float64 { return j.fulfillmentAt(j.placed) }

// fulfillmentAt is j's fulfillment with placed trainers placed.
func (j *jobState) fulfillmentAt(placed int64) float64 {
	if j.max == j.min {
		return 1
	}
	return float64(placed-j.min) / float64(j.max-j.min)
}

// victim is one trainer a job can lose, in the order the ReplicaSet controller
// deletes them.
type victim struct {
	req     vec
	node    int32 // index of the node it holds or is reserved on; -1 if none
	pod     int32 // index in Job.Trainers; -1 for a replica not created yet
	bound   bool  // bound by the scheduler: its node's capacity is in the snapshot
	unsched bool  // the scheduler reported it unschedulable
	created bool  // the pod exists; false for replicas not yet created
}

// unresolved marks a bound victim whose node index is not looked up yet:
// most trainers are never touched by a plan, so the name lookup is lazy.
const unresolved = -2

// nodeOf returns the index of the node v holds or is reserved on, -1 if none
// or if the node is not in the snapshot.
func (p *plan) nodeOf(j *jobState, v *victim) int32 {
	if v.node == unresolved {
		v.node = -1
		if n, ok := p.nodeIdx[j.in.Trainers[v.pod].Node]; ok {
			v.node = n
		}
	}
	return v.node
}

// holds reports whether the trainer has a node, for real or in the plan.
func (v *victim) holds() bool { return v.bound || v.node >= 0 }

// newPlanner builds the working copy; extra are placements beyond the jobs'
// and the pending pods' that the plan evaluates (the queued jobs').
func newPlan(snap snapshot.Snapshot, jobs []Job, opts Options, extra ...*snapshot.Placement) *plan {
	p := &plan{opts: opts, threshold: opts.MaxLoadDesired, snap: &snap}
	if !(p.threshold > 0) || math.IsInf(p.threshold, 0) {
		p.threshold = DefaultMaxLoadDesired
	}

	p.nodes = snap.Nodes
	if !slices.IsSortedFunc(p.nodes, func(a, b snapshot.Node) int { return strings.Compare(a.Name, b.Name) }) {
		p.nodes = slices.Clone(p.nodes)
		slices.SortFunc(p.nodes, func(a, b snapshot.Node) int { return strings.Compare(a.Name, b.Name) })
	}
	p.nodeIdx = make(map[string]int32, len(p.nodes))
	for i := range p.nodes {
		p.nodeIdx[p.nodes[i].Name] = int32(i) // #nosec G115 -- a node index: far fewer than 2^31 nodes
	}

	p.jobs = make([]*jobState, 0, len(jobs))
	p.byKey = make(map[string]*jobState, len(jobs))
	p.minPrio = math.MaxInt32
	for _, i := range canonicalOrder(jobs) {
		j := p.newJobState(&jobs[i])
		if j == nil {
			if _, dup := p.byKey[jobs[i].Key]; !dup && !slices.ContainsFunc(p.dropped, func(d *Job) bool { return d.Key == jobs[i].Key }) {
				p.dropped = append(p.dropped, &jobs[i])
			}
			continue
		}
		p.jobs = append(p.jobs, j)
		p.byKey[j.key] = j
		if j.movable {
			p.movable = append(p.movable, j)
			p.minPrio = min(p.minPrio, j.priority)
		}
	}

	placements := make([]*snapshot.Placement, 0, len(p.jobs)+len(snap.Pending)+len(extra))
	placements = append(placements, extra...)
	for _, j := range p.jobs {
		placements = append(placements, j.in.Placement)
	}
	for i := range snap.Pending {
		placements = append(placements, snap.Pending[i].Placement)
	}
	p.classes = newClasses(p.nodes, placements)
	for _, j := range p.jobs {
		j.elig = p.classes.set(j.in.Placement)
	}
	p.buildPools()
	p.buildTeams()

	// A trainer still being deleted long after its grace period (a slow
	// kubelet's backlog after a big scale-down) keeps its room from growth
	// but is no load to shrink for: its job's ReplicaSet has let it go
	// already, and taking more trainers for it would not make it go sooner
	// — only take its room twice, and add to the kubelet's backlog.
	type linger struct {
		n int
		r vec
	}
	var lingering []linger
	p.free = make([]vec, len(p.nodes))
	p.hold = make([]vec, len(p.nodes))
	for i := range p.nodes {
		n := &p.nodes[i]
		p.free[i] = vecOf(n.Free)
		for _, t := range n.Terminating {
			switch {
			case !opts.Now.After(t.Deadline.Add(SettleSlack)):
				p.goes(i, vecOf(t.Request))
			case t.Trainer:
				lingering = append(lingering, linger{i, vecOf(t.Request)})
			}
		}
	}
	for _, j := range p.jobs {
		// The trainers a scale-down under way is deleting still hold their
		// nodes: their room is the pending pods' once they are gone.
		for k := range j.next {
			if v := &j.victims[k]; v.bound {
				if n := p.nodeOf(j, v); n >= 0 {
					p.goes(int(n), v.req)
				}
			}
		}
	}
	p.fit = newFitter(p.classes, p.free)
	// Growth's load leaves out the pods that were going before this plan,
	// as the shrinking phases do: counting a terminating trainer would keep
	// the job it was given back for from growing into its room. The
	// removals of this plan stay in: their room is not growth's yet.
	for i := range p.pools {
		p.pools[i].growLoad = p.pools[i].requested
	}
	for _, l := range lingering {
		p.relieve(l.n, l.r)
	}
	return p
}

// SettleSlack is how long after its grace period a terminating pod is still
// expected to go; one that takes longer is stuck (on a lost node, behind a
// finalizer) and its room is not counted on.
const SettleSlack = 30 * time.Second

// goes records that pods holding r on node n are going: their room is free
// for the pods that wait, and held from growth until they have gone.
func (p *plan) goes(n int, r vec) {
	p.free[n] = p.free[n].plus(r)
	p.hold[n] = p.hold[n].plus(r)
	p.relieve(n, r)
}

// canonicalOrder is the order Plan reads jobs in: by key, and duplicate keys
// (a caller's mistake, of which only the first is planned) by their fields,
// so that the plan does not depend on the order of the input.
func canonicalOrder(jobs []Job) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &jobs[a], &jobs[b]
		if c := strings.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		for _, d := range [...]int64{int64(x.Min) - int64(y.Min), int64(x.Max) - int64(y.Max),
			int64(x.Current) - int64(y.Current), int64(x.Priority) - int64(y.Priority)} {
			if d != 0 {
				return int(max(-1, min(1, d)))
			}
		}
		return 0
	})
	return order
}

// newJobState builds the working copy of one job, or nil when the job cannot
// even be accounted (a duplicate key or a negative Current).
func (p *plan) newJobState(in *Job) *jobState {
	if _, dup := p.byKey[in.Key]; dup || in.Current < 0 {
		return nil
	}
	j := &jobState{
		in: in, key: in.Key, min: int64(in.Min), max: int64(in.Max), desired: int64(in.Current),
		priority: in.Priority, req: vecOf(in.Request), lim: vecOf(in.Limits), ns: namespaceOf(in.Key),
		goodputState: goodputState{goodput: p.opts.Policy == PolicyGoodput},
	}
	j.movable = in.Min >= 0 && in.Min < in.Max && in.Current >= in.Min && in.Current <= in.Max &&
		!j.req.isZero() && !j.req.negative()
	if p.opts.CoolDown > 0 && !in.LastScaleDown.IsZero() && p.opts.Now.Sub(in.LastScaleDown) < p.opts.CoolDown {
		j.coolingDown = true
	}

	// The ReplicaSet controller deletes, in order: replicas it has not
	// created yet, unscheduled pods, scheduled pods that are not running,
	// running pods; newest first within each group. The snapshot lists pods
	// oldest first, so that order is three backward passes; other input is
	// sorted first.
	ts := in.Trainers
	var byAge []int32 // nil: ts is already oldest first
	if !oldestFirst(ts) {
		byAge = make([]int32, len(ts))
		for i := range byAge {
			byAge[i] = int32(i)
		}
		slices.SortFunc(byAge, func(a, b int32) int {
			switch {
			case olderTrainer(&ts[a], &ts[b]):
				return -1
			case olderTrainer(&ts[b], &ts[a]):
				return 1
			}
			return int(a - b)
		})
	}
	existing := int64(len(ts))
	missing := max(0, j.desired-existing)
	j.victims = make([]victim, missing+existing)
	var start [3]int64 // where each deletion group begins in victims
	for i := range ts {
		if g := deletionGroup(&ts[i]); g < 2 {
			start[g+1]++
		}
	}
	start[0] = missing
	start[1] += start[0]
	start[2] += start[1]
	j.runFrom = int(start[2])
	for k := range missing {
		j.victims[k] = victim{req: j.req, node: -1, pod: -1}
	}
	for i := len(ts) - 1; i >= 0; i-- {
		pod := int32(i) // #nosec G115 -- an index of Job.Trainers: a job has far fewer than 2^31 pods
		if byAge != nil {
			pod = byAge[i]
		}
		t := &ts[pod]
		g := deletionGroup(t)
		v := victim{req: vecOf(t.Request), node: -1, pod: pod, created: true}
		if t.Node != "" {
			v.bound, v.node = true, unresolved
		} else {
			v.unsched = t.Unschedulable
		}
		j.victims[start[g]] = v
		start[g]++
	}
	// More pods than desired: the controller is already deleting the first
	// ones (newPlanner counts their room as going).
	j.next = int(max(0, existing-j.desired))
	j.gone = j.next
	return j
}

func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// olderTrainer orders trainers by creation, then name.
func olderTrainer(a, b *TrainerPod) bool {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c < 0
	}
	return a.Name < b.Name
}

func oldestFirst(ts []TrainerPod) bool {
	for i := 1; i < len(ts); i++ {
		if olderTrainer(&ts[i], &ts[i-1]) {
			return false
		}
	}
	return true
}

// removeNext takes the job's next trainer in ReplicaSet deletion order.
func (p *plan) removeNext(j *jobState) {
	v := &j.victims[j.next]
	j.next++
	j.desired--
	j.shrunk++
	if v.holds() {
		j.placed--
	}
	if !v.bound {
		j.unscheduledShrunk++
	}
	if n := p.nodeOf(j, v); n >= 0 {
		if v.bound {
			p.goes(int(n), v.req)
		} else {
			p.free[n] = p.free[n].plus(v.req) // its reservation
		}
		p.fit.set(int(n), p.free[n])
	}
	node := ""
	if v.pod >= 0 {
		node = j.in.Trainers[v.pod].Node
	}
	j.nodes = append(j.nodes, node)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
