package planner

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// actions turns the working copy into the plan: one action per job whose
// replicas changed, sorted by key.
func (p *plan) actions() []ScaleAction {
	var out []ScaleAction
	for _, j := range p.jobs {
		if j.desired == int64(j.in.Current) {
			continue
		}
		// #nosec G115 -- desired stays within [Min, Max], both int32.
		a := ScaleAction{Job: j.key, From: j.in.Current, To: int32(j.desired), Nodes: j.nodes, Remove: j.picked}
		if j.in.NamesRemovals && a.To < a.From {
			a.Remove = j.removed()
		}
		switch {
		case j.promised > 0:
			a.Reason, a.Cause = p.takeReason(j), CauseRebalance
		case j.grown > 0:
			a.Reason, a.Cause = p.growReason(j), CauseIdle
		case len(j.yieldNodes) > 0:
			a.Reason, a.Cause = p.shrinkReason(j), CausePriority
		case len(j.shareNodes) > 0:
			a.Reason, a.Cause = p.shrinkReason(j), CauseMinimum
		case len(j.admitNodes) > 0 || j.quotaGave > 0:
			a.Reason, a.Cause = p.shrinkReason(j), j.admitCause()
		case j.rebalanced > 0:
			a.Reason, a.Cause = p.rebalanceReason(j), CauseRebalance
		case j.shedFrom > 0 && j.shrunk == 1:
			a.Reason, a.Cause = j.shedReason(), CauseSlower
		case j.stuck > 0 && j.loadValue == 0 && j.stuckOutranked:
			a.Reason, a.Cause = p.shrinkReason(j), CausePriority
		case j.stuck > 0 && j.loadValue == 0:
			a.Reason, a.Cause = p.shrinkReason(j), CauseUnschedulable
		default:
			a.Reason, a.Cause = p.shrinkReason(j), CauseLoad
		}
		out = append(out, a)
	}
	sortActions(out)
	return out
}

func sortActions(a []ScaleAction) {
	sort.Slice(a, func(i, k int) bool { return a[i].Job < a[k].Job })
}

func (p *plan) growReason(j *jobState) string {
	pl := j.pool
	if pl.idleText == "" {
		// The same for every job of the pool: format it once.
		pl.idleText = pl.idle.resources().String() + " idle on " + plural(pl.idleNodes, "node")
		if pl != p.all {
			pl.idleText += " of its pool"
		}
	}
	if j.modelled() {
		return fmt.Sprintf("scale up by %d: %s; %s, the most of priority %d%s",
			j.grown, pl.idleText, j.gainText(j.growPlaced, "adds"), j.priority, passedNote(j))
	}
	return fmt.Sprintf("scale up by %d: %s; fulfillment %s (%d of %d..%d trainers placed) was the lowest",
		j.grown, pl.idleText, ratio(j.growFulfilment), j.growPlaced, j.min, j.max)
}

func (p *plan) shrinkReason(j *jobState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scale down by %d", j.shrunk)
	if j.unscheduledShrunk > 0 {
		fmt.Fprintf(&b, " (%d not yet scheduled)", j.unscheduledShrunk)
	}
	b.WriteString(": ")
	var parts []string
	if len(j.yieldNodes) > 0 {
		parts = append(parts, p.yieldReason(j))
	}
	if len(j.shareNodes) > 0 {
		parts = append(parts, p.shareReason(j))
	}
	if len(j.admitNodes) > 0 || j.quotaGave > 0 {
		parts = append(parts, p.admitReason(j))
	}
	if j.stuck > 0 {
		why := fmt.Sprintf("%s of the job cannot be scheduled and no node it may use has room for one (%s)",
			plural(j.stuck, "trainer"), j.victims[j.next-1].req.resources())
		if j.stuckOutranked {
			why += "; " + p.outrankedBy(j) + " hold or wait for the room (kube-scheduler preempts trainers for them)"
		}
		parts = append(parts, why)
	}
	if j.loadValue != 0 {
		load := ratio(j.loadValue)
		if math.IsInf(j.loadValue, 1) {
			load = "unbounded (no allocatable " + resNames[j.loadRes] + ")"
		}
		load += onPool(j.loadPooled)
		parts = append(parts, fmt.Sprintf("%s load %s above max_load_desired %s", resNames[j.loadRes], load, ratio(p.threshold)))
	}
	b.WriteString(strings.Join(parts, "; "))
	return b.String()
}

// ratio renders a load or fulfillment with up to three decimals, so that a
// load of 0.971 is not shown as the 0.97 it exceeds.
func ratio(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// yieldReason describes the unschedulable pods that outrank j, all of them:
// the pods that fit once a first one made room benefit from j's trainers too.
func (p *plan) yieldReason(j *jobState) string {
	var need vec
	count := 0
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for _, pod := range p.waiting {
		if pod.Priority <= j.priority {
			continue
		}
		count++
		need = need.plus(vecOf(pod.Request))
		lo, hi = min(lo, pod.Priority), max(hi, pod.Priority)
	}
	prio := strconv.Itoa(int(hi))
	if lo != hi {
		prio = fmt.Sprintf("%d..%d", lo, hi)
	}
	verb := "need"
	if count == 1 {
		verb = "needs"
	}
	return fmt.Sprintf("%s of priority %s %s %s; trainers of priority %d make room on %s",
		plural(count, "unschedulable pod"), prio, verb, need.resources(), j.priority, plural(len(j.yieldNodes), "node"))
}

// shareReason describes the pods of jobs of j's priority that are below
// their minimum and for which j gave back trainers above its own.
func (p *plan) shareReason(j *jobState) string {
	var need vec
	count := 0
	jobs := map[string]bool{}
	for _, pod := range p.waiting {
		if pod.Priority != j.priority || pod.Job == "" || pod.Job == j.key {
			continue
		}
		count++
		jobs[pod.Job] = true
		need = need.plus(vecOf(pod.Request))
	}
	verb := "need"
	if count == 1 {
		verb = "needs"
	}
	return fmt.Sprintf("%s of %s below their minimum %s %s; trainers above this job's minimum make room on %s (all of priority %d)",
		plural(count, "unschedulable pod"), plural(len(jobs), "job"), verb, need.resources(), plural(len(j.shareNodes), "node"), j.priority)
}

func (p *plan) rebalanceReason(j *jobState) string {
	if j.teamNote != "" {
		return fmt.Sprintf("scale down by %d: %s: its trainers above their minimum go back to team %s (%s)",
			j.rebalanced, j.teamNote, j.reclaimWith.team.team.name, j.reclaimWith.key)
	}
	if j.modelled() && j.rebalanceTo.modelled() { // moved by worthMoving
		return fmt.Sprintf("scale down by %d: %s; to %s, %s, more than %d× as much (priority %d)",
			j.rebalanced, j.gainText(j.rebalancePlaced-1, "adds"), j.rebalanceTo.key, j.rebalanceTo.gainText(j.rebalanceToAt, "would add"), MoveGainFactor, j.priority)
	}
	return fmt.Sprintf("scale down by %d: fulfillment %s (%d of %d..%d trainers placed) is more than %s above the %s of %s, the least fulfilled job of priority %d; the room goes to the least fulfilled jobs",
		j.rebalanced, ratio(j.rebalanceFrom), j.rebalancePlaced, j.min, j.max, ratio(p.rebalanceGap()), ratio(j.rebalanceToF), j.rebalanceTo.key, j.priority)
}

// takeReason describes a taker's scale-up: the room that more fulfilled
// jobs give back, and what growth added from idle capacity besides. Its
// trainers before the plan are the placed ones less both: a taker shrinks
// nothing in the plan.
func (p *plan) takeReason(j *jobState) string {
	var b strings.Builder
	before := j.placed - j.promised - j.grown
	if j.teamNote != "" {
		fmt.Fprintf(&b, "scale up by %d: %s: team %s, which uses more of its own, gives back %s for it (%s)",
			j.promised+j.grown, j.teamNote, j.reclaimWith.team.team.name, plural(int(j.promised), "trainer"), j.reclaimWith.key)
		if j.grown > 0 {
			fmt.Fprintf(&b, "; %d more into idle capacity", j.grown)
		}
		return b.String()
	}
	if j.modelled() && j.promisedBy.modelled() { // moved by worthMoving
		fmt.Fprintf(&b, "scale up by %d: %s gives back %s for it, where it adds less; %s",
			j.promised+j.grown, j.promisedBy.key, plural(int(j.promised), "trainer"), j.gainText(before, "adds"))
	} else {
		fmt.Fprintf(&b, "scale up by %d: %s, more fulfilled (%s), gives back %s for it; fulfillment %s (%d of %d..%d trainers placed) was the lowest of priority %d",
			j.promised+j.grown, j.promisedBy.key, ratio(j.promisedBy.fulfillment()), plural(int(j.promised), "trainer"),
			ratio(j.fulfillmentAt(before)), before, j.min, j.max, j.priority)
	}
	if j.grown > 0 {
		fmt.Fprintf(&b, "; %d more into idle capacity", j.grown)
	}
	return b.String()
}

// outrankedBy describes the waiting pods of a priority higher than j's.
func (p *plan) outrankedBy(j *jobState) string {
	count := 0
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for _, pod := range p.waiting {
		if pod.Priority > j.priority {
			count++
			lo, hi = min(lo, pod.Priority), max(hi, pod.Priority)
		}
	}
	prio := strconv.Itoa(int(hi))
	if lo != hi {
		prio = fmt.Sprintf("%d..%d", lo, hi)
	}
	return fmt.Sprintf("%s of priority %s", plural(count, "pod"), prio)
}

// reasonNotes are what the phases note about a job only to explain its
// action ([plan.actions]): which kind of reason it gets and the numbers it quotes.
type reasonNotes struct {
	unscheduledShrunk int64          // trainers removed before they were scheduled
	yieldNodes        map[int32]bool // nodes freed for pods of a higher priority
	shareNodes        map[int32]bool // nodes freed for pods of jobs below their minimum, of its priority
	admitNodes        map[int32]bool // nodes freed for the minimums of queued jobs ([plan.admit])
	quotaGave         int64          // trainers given back for the quota of queued jobs of its namespace ([plan.yieldQuota])
	admitted          []admitFor     // the queued jobs admitted with its trainers
	stuck             int            // unschedulable trainers given up by trimStuck
	stuckOutranked    bool           // pods of a higher priority hold the room they would need
	loadRes           int            // the resource over the threshold when load first took a trainer
	loadValue         float64        // its load then
	loadPooled        bool           // of a pool, not of the whole cluster
	growFulfilment    float64        // fulfillment before the first trainer grown
	growPlaced        int64          // placed trainers then
	rebalanced        int64          // trainers given back by rebalance
	rebalanceFrom     float64        // its fulfillment before
	rebalancePlaced   int64          // its placed trainers before
	rebalanceTo       *jobState      // the least fulfilled job when it first gave
	rebalanceToF      float64        // that job's fulfillment then
	rebalanceToAt     int64          // and its trainers placed and promised then
	// teamNote is, for a job that gave or took by reclaim, its team's use
	// and share of the pool before the first move; reclaimWith is the job
	// on the other side of that move.
	teamNote    string
	reclaimWith *jobState
}

// teamNote describes g's use of its pool against its deserved share, on
// the resource it uses most of: "team nlp uses 52% of the pool's CPU, its
// share is 33%".
func teamNote(g *teamPool) string {
	r, most := resCPU, -1.0
	for k := range numRes {
		if g.capacity[k] > 0 {
			if f := float64(g.used[k]) / float64(g.capacity[k]); f > most {
				r, most = k, f
			}
		}
	}
	if most < 0 {
		return "team " + g.team.name
	}
	pct := func(v int64) string {
		return strconv.Itoa(int(math.Round(100*float64(v)/float64(g.capacity[r])))) + "%"
	}
	return fmt.Sprintf("team %s uses %s of the pool's %s, its share is %s", g.team.name, pct(g.used[r]), resNames[r], pct(g.deserved[r]))
}

// passedNote names, under goodput, the job next in line when j got its
// first trainer, which the trainer would have sped up less: "; to ns/b,
// a 3rd trainer would add 0.10× (…)".
func passedNote(j *jobState) string {
	if j.passed == nil {
		return ""
	}
	return fmt.Sprintf("; to %s, %s", j.passed.key, j.passed.gainText(j.passedAt, "would add"))
}
