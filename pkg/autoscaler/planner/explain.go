package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// explanations explains every job the plan read, sorted by key.
func (p *plan) explanations(actions []ScaleAction) []Explanation {
	out := make([]Explanation, 0, len(p.jobs)+len(p.dropped))
	k := 0
	for _, j := range p.jobs {
		var act *ScaleAction
		for k < len(actions) && actions[k].Job < j.key {
			k++
		}
		if k < len(actions) && actions[k].Job == j.key {
			act = &actions[k]
		}
		out = append(out, p.explain(j, act))
	}
	for _, in := range p.dropped {
		if _, planned := p.byKey[in.Key]; planned {
			continue
		}
		out = append(out, Explanation{Job: in.Key, Limit: LimitNotElastic, From: in.Current, To: in.Current,
			Min: in.Min, Max: in.Max, Priority: in.Priority,
			Message: fmt.Sprintf("its trainer ReplicaSet asks for %d replicas", in.Current)})
	}
	sortExplanations(out)
	return out
}

func sortExplanations(e []Explanation) {
	// Jobs are mostly in key order already; dropped ones are few.
	for i := 1; i < len(e); i++ {
		for k := i; k > 0 && e[k].Job < e[k-1].Job; k-- {
			e[k], e[k-1] = e[k-1], e[k]
		}
	}
}

// explain finds j's limit. The order matters: what the plan did to the job
// this cycle comes first (a job grown this cycle is never "no room"), then
// what kept it out of growth, then why growth let it go.
func (p *plan) explain(j *jobState, act *ScaleAction) Explanation {
	e := Explanation{Job: j.key, From: j.in.Current, To: int32(j.desired), // #nosec G115 -- desired stays within [Min, Max] or at Current
		Min: j.in.Min, Max: j.in.Max, Priority: j.priority, Placed: j.placed, Fulfillment: j.fulfillment()}
	switch {
	case j.preempted:
		e.Limit, e.Pods = LimitYieldedToPriority, []string{j.preemptedBy}
		e.Message = fmt.Sprintf("stopped whole for queued %s of priority %d, above its %d; it waits in the queue to start again",
			j.preemptedBy, j.preemptedByPriority, j.priority)
	case !j.movable:
		e.Limit, e.Message = LimitNotElastic, notElastic(j)
	case act != nil && p.opts.DryRun:
		e.Limit = LimitDryRun
		e.Message = fmt.Sprintf("dry run: the plan would scale from %d to %d trainers (%s), and nothing is applied: %s",
			act.From, act.To, act.Cause, act.Reason)
	case j.promised > 0:
		e.Limit = LimitGrowing
		if j.desired >= j.max {
			e.Limit = LimitAtMax
		}
		e.Message = fmt.Sprintf("grows by %d to %s into the room %s, more fulfilled (%s), gives back by rebalancing; fulfillment %s",
			j.promised+j.grown, trainersOf(j), j.promisedBy.key, ratio(j.promisedBy.fulfillment()), ratio(e.Fulfillment))
		if j.teamNote != "" {
			e.Message = fmt.Sprintf("grows by %d to %s: %s; team %s, which uses more of its own, gives its room back", j.promised+j.grown, trainersOf(j),
				j.teamNote, j.reclaimWith.team.team.name)
		}
		if j.capped != nil {
			e.Message += fmt.Sprintf("; this plan moved the %d trainers %s may move in one, more follow in the next", j.cappedAt, j.cappedIn)
		}
	case j.grown > 0 && j.desired >= j.max:
		e.Limit, e.Message = LimitAtMax, fmt.Sprintf("grows by %d to its maximum, %s", j.grown, trainersOf(j))
	case j.grown > 0:
		e.Limit = LimitGrowing
		e.Message = fmt.Sprintf("grows by %d to %s into idle capacity; fulfillment %s", j.grown, trainersOf(j), ratio(e.Fulfillment))
		if j.modelled() {
			e.Message = fmt.Sprintf("grows by %d to %s into idle capacity; %s, the most of priority %d%s",
				j.grown, trainersOf(j), j.gainText(j.growPlaced, "adds"), j.priority, passedNote(j))
		}
	case act != nil:
		p.explainShrink(j, act, &e)
	case j.desired >= j.max:
		e.Limit, e.Message = LimitAtMax, "at its maximum, "+trainersOf(j)
	case j.resizeHeld:
		e.Limit, e.CoolDownLeft = LimitCoolDown, j.resizeUntil.Sub(p.opts.Now)
		e.Message = resizeHeldMessage(j, p.opts)
	case j.coolingDown:
		e.Limit = LimitCoolDown
		until := j.in.LastScaleDown.Add(p.opts.CoolDown)
		e.CoolDownLeft = until.Sub(p.opts.Now)
		e.Message = fmt.Sprintf("scaled down at %s; not grown again before %s (cool-down %s), at %s",
			j.in.LastScaleDown.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), p.opts.CoolDown, trainersOf(j))
	case j.desired == j.min && p.overFor(j) >= 0:
		r := p.overFor(j)
		e.Limit, e.Resource, e.Load, e.Threshold = LimitAtMin, resNames[r], j.pool.load(r), p.threshold
		e.Message = fmt.Sprintf("held at its minimum of %d trainers: %s load %s%s is above max_load_desired %s",
			j.min, resNames[r], loadText(e.Load, r), onPool(j.pool != p.all), ratio(p.threshold))
	case j.capped != nil:
		e.Limit, e.Other, e.OtherFulfillment = LimitFairShare, j.capped.key, j.capped.fulfillment()
		e.Message = fmt.Sprintf("at %s (fulfillment %s): %s (fulfillment %s) is to give trainers back for it, but this plan moved the %d trainers %s may move in one, more follow in the next",
			trainersOf(j), ratio(e.Fulfillment), e.Other, ratio(e.OtherFulfillment), j.cappedAt, j.cappedIn)
	case j.unschedulable || j.starved:
		p.explainNoFit(j, &e, p.fit, true)
	case j.quotaHeld:
		p.explainQuota(j, &e)
	case j.stop == stopGain:
		e.Limit = LimitNoGain
		e.Message = fmt.Sprintf("at %s: %s, below the %.1f× the goodput policy asks of a trainer; the room goes to jobs it speeds up more",
			trainersOf(j), j.gainText(j.placed, "would add"), MinGain)
	case j.stop == stopPrice:
		e.Limit = LimitNoGain
		e.Message = fmt.Sprintf("at %s: %s, which would save %s of the %s it has left, less than a restart's %s",
			trainersOf(j), j.gainText(j.placed, "would add"), j.saves(j.placed).Round(time.Second), j.in.Progress.Left.Round(time.Second), j.in.ResizeCost)
	case j.stop == stopLoad && p.couldHold(j.req, j.elig):
		// A trainer larger than every node of a small pool also passes its
		// pool's threshold; the nodes' size is the cause to name then.
		p.explainLoad(j, &e)
	default: // stopNoFit, or a trainer no node it may use could ever hold
		p.explainNoFit(j, &e, p.grower, false)
	}
	return e
}

// trainersOf says where j stands after the plan: "4 of 1..10 trainers".
func trainersOf(j *jobState) string {
	return strconv.FormatInt(j.desired, 10) + " of " + strconv.FormatInt(j.min, 10) + ".." + strconv.FormatInt(j.max, 10) + " trainers"
}

func notElastic(j *jobState) string {
	in := j.in
	switch {
	case in.Min == in.Max:
		return fmt.Sprintf("min-instance equals max-instance (%d): the autoscaler does not scale it", in.Min)
	case in.Min < 0 || in.Min > in.Max || in.Current < in.Min || in.Current > in.Max:
		return fmt.Sprintf("its trainer ReplicaSet asks for %d replicas, outside %d..%d", in.Current, in.Min, in.Max)
	case j.req.negative():
		return "its trainer's request is negative"
	}
	return "its trainers request no CPU, memory or GPU (" + j.req.resources().String() + ")"
}

// explainShrink explains a job the plan shrinks, by the kind of its action.
func (p *plan) explainShrink(j *jobState, act *ScaleAction, e *Explanation) {
	by := fmt.Sprintf("gives back %s, to %d of %d..%d", plural(int(act.From-act.To), "trainer"), j.desired, j.min, j.max)
	switch act.Cause {
	case CausePriority:
		e.Limit = LimitYieldedToPriority
		e.Pods, e.PodPriority = p.waitingPods(func(prio int32, _ string) bool { return prio > j.priority })
		if len(e.Pods) == 0 && len(j.admitted) > 0 {
			// It gave way to the minimum of a queued job, whose pods do not
			// exist yet.
			e.Message = fmt.Sprintf("%s: %s", by, p.admitReason(j))
			for _, a := range j.admitted {
				e.Pods, e.PodPriority = append(e.Pods, a.key), max(e.PodPriority, a.priority)
			}
			return
		}
		e.Message = fmt.Sprintf("%s for %s of priority up to %d (%s)", by, plural(len(e.Pods), "pod"), e.PodPriority, podList(e.Pods))
	case CauseMinimum:
		e.Limit = LimitYieldedToMinimum
		e.Pods, e.PodPriority = p.waitingPods(func(prio int32, job string) bool {
			return prio == j.priority && job != "" && job != j.key
		})
		if len(e.Pods) == 0 && len(j.admitted) > 0 {
			e.Message = fmt.Sprintf("%s: %s", by, p.admitReason(j))
			for _, a := range j.admitted {
				e.Pods, e.PodPriority = append(e.Pods, a.key), a.priority
			}
			return
		}
		e.Message = fmt.Sprintf("%s for %s of jobs of its priority below their minimum (%s)", by, plural(len(e.Pods), "pod"), podList(e.Pods))
	case CauseRebalance:
		e.Limit, e.Other, e.OtherFulfillment = LimitFairShare, j.rebalanceTo.key, j.rebalanceTo.fulfillment()
		if j.teamNote != "" {
			e.Message = fmt.Sprintf("%s: %s: its trainers above their minimum go back to team %s", by, j.teamNote, j.reclaimWith.team.team.name)
			return
		}
		e.Message = fmt.Sprintf("%s: its fulfillment %s was more than %s above the %s of %s, the least fulfilled job of priority %d",
			by, ratio(j.rebalanceFrom), ratio(p.rebalanceGap()), ratio(j.rebalanceToF), e.Other, j.priority)
	case CauseUnschedulable:
		e.Need = j.req.resources()
		if node, alloc, ok := p.largestNode(j); !ok || !j.req.fitsIn(alloc) {
			e.Limit, e.Node, e.Room = LimitNoEligibleNode, node, alloc.resources()
			e.Message = fmt.Sprintf("%s that cannot be scheduled: one trainer needs %s, more than any node it may use holds", by, e.Need)
			return
		}
		room := p.largestRoom(j, p.fit)
		e.Limit, e.Node, e.Room = LimitNoRoom, room.node, room.room.resources()
		e.Message = fmt.Sprintf("%s that cannot be scheduled: no node it may use has room for one (%s); the largest room is %s (%s)",
			by, e.Need, e.Room, e.Node)
	case CauseSlower:
		e.Limit = LimitNoGain
		e.Message = fmt.Sprintf("%s: %s; the job runs faster without it", by, j.gainText(j.shedFrom-1, "adds"))
	default: // CauseLoad
		e.Limit, e.Resource, e.Load, e.Threshold = LimitLoad, resNames[j.loadRes], j.loadValue, p.threshold
		pooled := j.loadPooled
		if r := p.overFor(j); r >= 0 && j.desired == j.min {
			e.Limit, e.Resource, e.Load, pooled = LimitAtMin, resNames[r], j.pool.load(r), j.pool != p.all
		}
		e.Message = fmt.Sprintf("%s: %s load %s%s was above max_load_desired %s", by, e.Resource, loadText(e.Load, resIndex(e.Resource)), onPool(pooled), ratio(p.threshold))
	}
}

// overFor returns a resource j's trainers ask for that is over the
// threshold in its pool after the plan's removals, or -1.
func (p *plan) overFor(j *jobState) int {
	mask := p.over(j.pool, j.pool.requested)
	for r := range numRes {
		if mask&(1<<r) != 0 && j.req[r] > 0 {
			return r
		}
	}
	return -1
}

func resIndex(name string) int {
	for r, n := range resNames {
		if n == name {
			return r
		}
	}
	return 0
}

func loadText(load float64, r int) string {
	if math.IsInf(load, 1) {
		return "unbounded (no allocatable " + resNames[r] + ")"
	}
	return ratio(load)
}

// explainLoad explains a job growth let go because one more trainer would
// pass the threshold.
func (p *plan) explainLoad(j *jobState, e *Explanation) {
	pl := j.pool
	next := pl.growLoad.plus(j.req)
	r := 0
	for k := range numRes {
		if j.req[k] > 0 && p.exceeds(pl, next[k], k) {
			r = k
			break
		}
	}
	e.Limit, e.Resource, e.Threshold, e.Need = LimitLoad, resNames[r], p.threshold, j.req.resources()
	e.Load = math.Inf(1)
	if pl.total[r] > 0 {
		e.Load = float64(pl.growLoad[r]) / float64(pl.total[r])
	}
	of := ""
	if pl != p.all {
		of = fmt.Sprintf(" on its pool of %s", plural(pl.nodes, "node"))
	}
	if pl.kept[r] > 0 {
		of += fmt.Sprintf(", %s of it kept for jobs admitted and starting", amount(pl.kept[r], r))
	}
	e.Message = fmt.Sprintf("one more trainer (%s) would take %s requests past max_load_desired %s: %s of %s requested%s (load %s)",
		amount(j.req[r], r), resNames[r], ratio(p.threshold), amount(pl.growLoad[r], r), amount(pl.total[r], r), of, loadText(e.Load, r))
}

func amount(v int64, r int) string {
	switch r {
	case resCPU:
		return snapshot.FormatMilli(v) + " CPU"
	case resMemory:
		return fmt.Sprintf("%d MiB memory", v)
	}
	return fmt.Sprintf("%d GPU", v)
}

// explainQuota explains a job its namespace's quota stopped.
func (p *plan) explainQuota(j *jobState, e *Explanation) {
	e.Limit, e.Need = LimitQuota, j.req.resources()
	q := p.quotas[j.ns]
	type dim struct {
		name       string
		left, each int64
		r          int // resource, -1 for pods
	}
	dims := []dim{
		{"pods", q.Pods, 1, -1},
		{"requests.cpu", q.Requests.CPUMilli, j.req[resCPU], resCPU},
		{"requests.memory", q.Requests.MemoryMega, j.req[resMemory], resMemory},
		{"requests.gpu", q.Requests.GPU, j.req[resGPU], resGPU},
		{"limits.cpu", q.Limits.CPUMilli, j.lim[resCPU], resCPU},
		{"limits.memory", q.Limits.MemoryMega, j.lim[resMemory], resMemory},
		{"limits.gpu", q.Limits.GPU, j.lim[resGPU], resGPU},
	}
	for _, d := range dims {
		if d.each <= 0 || d.left >= d.each {
			continue
		}
		e.Resource = d.name
		show := func(v int64) string {
			if d.r < 0 {
				return plural(int(v), "pod")
			}
			return amount(v, d.r)
		}
		e.Message = fmt.Sprintf("the ResourceQuota of namespace %s leaves %s %s, and one more trainer needs %s; at %s",
			j.ns, d.name, show(max(0, d.left)), show(d.each), trainersOf(j))
		return
	}
	e.Message = "the ResourceQuota of namespace " + j.ns + " has no room for one more trainer"
}

// explainNoFit explains a job whose next trainer finds no room in f: no
// eligible node at all, room kept for a job cooling down or taken by jobs
// ahead in line (fair share), room still held by pods that are going
// (settling), or no room. pending says the job's own trainers wait for a
// node.
func (p *plan) explainNoFit(j *jobState, e *Explanation, f *fitter, pending bool) {
	e.Need = j.req.resources()
	waiting := 0
	if pending {
		for k := j.next; k < len(j.victims); k++ {
			if !j.victims[k].holds() {
				waiting++
			}
		}
	}
	if node, alloc, ok := p.largestNode(j); !ok || !j.req.fitsIn(alloc) {
		e.Limit, e.Node, e.Room = LimitNoEligibleNode, node, alloc.resources()
		if !ok {
			e.Message = fmt.Sprintf("no Ready, schedulable node matches where its trainers may run (node selector, affinity, tolerations); one trainer needs %s", e.Need)
		} else {
			e.Message = fmt.Sprintf("one trainer needs %s, more than any node it may use: the largest, %s, has %s allocatable", e.Need, node, e.Room)
		}
		return
	}
	trainers := trainersOf(j)
	switch {
	case pending && p.fit.firstFit(j.req, j.elig) >= 0:
		e.Limit = LimitSettling
		e.Message = fmt.Sprintf("%s of its %s wait for a node, where they fit; it grows once they are placed", plural(waiting, "trainer"), trainers)
		return
	case !pending && f.firstFit(j.req, j.elig) >= 0:
		// Room it could use is left, but a job cooling down or arriving
		// ahead of it keeps it.
		if b := p.blockerOf(j, int32(f.firstFit(j.req, j.elig))); b != nil { // #nosec G115 -- a node index
			e.Limit, e.Other, e.OtherFulfillment = LimitFairShare, b.key, b.fulfillment()
			e.Message = fmt.Sprintf("at %s (fulfillment %s): the room it could use is kept for %s (fulfillment %s), which is cooling down and grows first",
				trainers, ratio(e.Fulfillment), b.key, ratio(e.OtherFulfillment))
			return
		}
	case !pending && j.fitAtStart && j.lostTo != nil && j.modelled() && j.lostTo.modelled():
		e.Limit, e.Other, e.OtherFulfillment = LimitFairShare, j.lostTo.key, j.lostTo.fulfillment()
		e.Message = fmt.Sprintf("at %s: the idle room it could use went to jobs a trainer speeds up more: %s here, against %s to %s (priority %d%s)",
			trainers, j.gainText(j.placed, "would add"), j.lostTo.gainText(j.lostTo.placed-1, "adds"), e.Other, j.lostTo.priority, arrivingNote(j.lostTo))
		return
	case !pending && j.fitAtStart && j.lostTo != nil:
		e.Limit, e.Other, e.OtherFulfillment = LimitFairShare, j.lostTo.key, j.lostTo.fulfillment()
		e.Message = fmt.Sprintf("at %s (fulfillment %s): the idle room it could use went to jobs ahead of it in line (of a higher priority or less fulfilled), the last to %s (priority %d, fulfillment %s%s)",
			trainers, ratio(e.Fulfillment), e.Other, j.lostTo.priority, ratio(e.OtherFulfillment), arrivingNote(j.lostTo))
		return
	case !pending && p.fit.firstFit(j.req, j.elig) >= 0:
		e.Limit = LimitSettling
		e.Message = fmt.Sprintf("at %s: the room it could use is still held by pods that are terminating; it grows once they have gone", trainers)
		return
	}
	e.Limit = LimitNoRoom
	room := p.largestRoom(j, f)
	e.Node, e.Room = room.node, room.room.resources()
	where := "no node it may use has room"
	if e.Node != "" {
		where = fmt.Sprintf("the largest room on a node it may use is %s (%s)", e.Room, e.Node)
	}
	e.Message = fmt.Sprintf("no node it may use has room for one more trainer (%s): %s; at %s", e.Need, where, trainers)
	if pending {
		e.Message = fmt.Sprintf("%d of its trainers cannot be scheduled: %s", waiting, e.Message)
	}
}

// arrivingNote says of a job growth gave room to that it is not Running yet.
func arrivingNote(j *jobState) string {
	if j.arriving {
		return "; admitted and starting, the room is kept for it"
	}
	return ""
}

// blockerOf returns the first job cooling down that growth kept room for
// ahead of j on node n, the room j could use.
func (p *plan) blockerOf(j *jobState, n int32) *jobState {
	for _, b := range p.blockers {
		if b.priority >= j.priority && b.elig.has(n, p.classes.classOf[n]) && b.req.fitsIn(vecOf(p.nodes[n].Allocatable)) {
			return b
		}
	}
	return nil
}

// waitingPods lists the waiting pods the plan made or kept room for that
// match, and the highest of their priorities.
func (p *plan) waitingPods(match func(priority int32, job string) bool) ([]string, int32) {
	var pods []string
	top := int32(math.MinInt32)
	for _, pod := range p.waiting {
		if match(pod.Priority, pod.Job) {
			pods = append(pods, pod.Namespace+"/"+pod.Name)
			top = max(top, pod.Priority)
		}
	}
	if len(pods) == 0 {
		top = 0
	}
	return pods, top
}

// podList names up to three pods.
func podList(pods []string) string {
	if len(pods) <= 3 {
		return strings.Join(pods, ", ")
	}
	return strings.Join(pods[:3], ", ") + fmt.Sprintf(" and %d more", len(pods)-3)
}
