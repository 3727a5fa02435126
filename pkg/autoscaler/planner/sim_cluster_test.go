package planner

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// sim is a small cluster that Plan runs against for many cycles: a
// scheduler that binds pending pods first-fit in priority order and
// preempts lower-priority pods the way kube-scheduler does (fewest victims
// of the lowest priority on one node), ReplicaSets that create missing
// trainers and delete the unscheduled and then the newest first, and a
// grace period during which deleted pods still hold their node.
type sim struct {
	t      *testing.T
	rng    *rand.Rand
	tick   int
	nodes  []*simNode
	pods   []*simPod
	jobs   []*simJob
	seq    int
	grace  int // ticks a deleted pod holds its node
	opts   Options
	frozen bool // no more random events: the plan must reach a fixed point
	// gang: jobs are submitted queued, their pods gated, and Decide admits
	// them ([TestGangAdmissionOverManyCycles]); a job is planned once its minimum ran.
	gang bool
	// admitted is set while the plan being checked admitted a job;
	// lastAdmitted counts the last plan's admissions.
	admitted     bool
	lastAdmitted int
	submitted    int // jobs submitted so far
	// seen counts the actions by cause and the scheduler's preemptions, to
	// show that the runs exercise what they claim to.
	seen map[string]int
}

type simNode struct {
	name     string
	alloc    vec
	cordoned bool
	labels   map[string]string
	taints   []corev1.Taint
}

type simPod struct {
	name      string
	job       *simJob // the trainer's job; nil for other pods
	priority  int32
	never     bool // preemptionPolicy: Never
	req       vec
	node      string
	nominated string
	created   int
	deleteAt  int  // tick the pod is gone; 0 while not deleted
	marked    bool // picked by a plan: the lowest pod-deletion-cost
	tried     bool
	placement *snapshot.Placement
	gated     bool    // carries the admission gate: the scheduler leaves it alone
	member    *simJob // the pserver's job; nil for trainers and other pods
}

type simJob struct {
	key       string
	min, max  int32
	replicas  int32
	priority  int32
	req       vec
	scaleDown time.Time
	placement *snapshot.Placement
	// With gang admission: pservers of psReq each, created with the job.
	queued, running bool
	pservers        int32
	psReq           vec
	created         int
}

func (s *sim) now() time.Time { return t0.Add(time.Duration(s.tick) * time.Second) }

func (s *sim) node(name string) *simNode {
	for _, n := range s.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (s *sim) live(p *simPod) bool { return p.deleteAt == 0 || p.deleteAt > s.tick }

func (s *sim) mayRun(p *simPod, n *simNode) bool {
	if n.cordoned {
		return false
	}
	pl := p.placement
	if p.job != nil {
		pl = p.job.placement
	}
	if p.member != nil {
		pl = p.member.placement
	}
	return mayRun(pl, &corev1.Node{ObjectMeta: objectMeta(n.name, n.labels), Spec: corev1.NodeSpec{Taints: n.taints}})
}

func (s *sim) free(n *simNode) vec {
	f := n.alloc
	for _, p := range s.pods {
		if p.node == n.name && s.live(p) {
			f = f.minus(p.req)
		}
	}
	return f
}

// step advances the cluster one tick: deletions end, ReplicaSets converge,
// the scheduler places and preempts.
func (s *sim) step() {
	s.tick++
	s.pods = slices.DeleteFunc(s.pods, func(p *simPod) bool { return !s.live(p) })
	for _, j := range s.jobs {
		var mine []*simPod
		for _, p := range s.pods {
			if p.job == j && p.deleteAt == 0 {
				mine = append(mine, p)
			}
		}
		for i := int32(len(mine)); i < j.replicas; i++ {
			s.seq++
			s.pods = append(s.pods, &simPod{name: fmt.Sprintf("%s-t%d", j.key, s.seq), job: j, priority: j.priority,
				req: j.req, created: s.tick, gated: j.queued})
		}
		pservers := int32(0)
		for _, p := range s.pods {
			if p.member == j && p.deleteAt == 0 {
				pservers++
			}
		}
		for ; pservers < j.pservers; pservers++ {
			s.seq++
			s.pods = append(s.pods, &simPod{name: fmt.Sprintf("%s-p%d", j.key, s.seq), member: j, priority: j.priority,
				req: j.psReq, created: s.tick, gated: j.queued})
		}
		// Unscheduled first, then the marked ones, then newest.
		slices.SortFunc(mine, func(a, b *simPod) int {
			if (a.node == "") != (b.node == "") {
				if a.node == "" {
					return -1
				}
				return 1
			}
			if a.marked != b.marked {
				if a.marked {
					return -1
				}
				return 1
			}
			if a.created != b.created {
				return b.created - a.created
			}
			return strings.Compare(b.name, a.name)
		})
		for k := 0; k < len(mine)-int(j.replicas); k++ {
			s.remove(mine[k])
		}
	}
	s.schedule()
}

// mark gives the pods a plan picked the lowest pod-deletion-cost, as the
// actuator does before it lowers the replicas.
func (s *sim) mark(a ScaleAction) {
	for _, p := range s.pods {
		if p.job != nil && p.job.key == a.Job && slices.Contains(a.Remove, p.name) {
			p.marked = true
		}
	}
}

func (s *sim) remove(p *simPod) {
	if p.node == "" {
		p.deleteAt = s.tick // gone now
		return
	}
	p.deleteAt = s.tick + s.grace
}

func (s *sim) schedule() {
	var queue []*simPod
	for _, p := range s.pods {
		if p.node == "" && p.deleteAt == 0 && !p.gated {
			queue = append(queue, p)
		}
	}
	slices.SortStableFunc(queue, func(a, b *simPod) int {
		if a.priority != b.priority {
			return int(b.priority - a.priority)
		}
		return a.created - b.created
	})
	for _, p := range queue {
		p.tried = true
		if n := s.fit(p); n != nil {
			p.node, p.nominated = n.name, ""
			continue
		}
		if p.never || p.nominated != "" {
			continue
		}
		s.preempt(p)
	}
}

// fit is the first node with room for p, keeping nominated pods' room.
func (s *sim) fit(p *simPod) *simNode {
	for _, n := range s.nodes {
		if !s.mayRun(p, n) {
			continue
		}
		f := s.free(n)
		for _, o := range s.pods {
			if o != p && o.node == "" && o.nominated == n.name && o.priority >= p.priority && o.deleteAt == 0 {
				f = f.minus(o.req)
			}
		}
		if p.req.fitsIn(f) {
			return n
		}
	}
	return nil
}

// preempt is kube-scheduler's DefaultPreemption, simplified: on each node,
// remove lower-priority pods, lowest priority and newest first, until p
// fits; pick the node whose victims have the lowest highest priority, then
// the fewest victims.
func (s *sim) preempt(p *simPod) {
	var best *simNode
	var bestVictims []*simPod
	bestPrio := int32(0)
	for _, n := range s.nodes {
		if !s.mayRun(p, n) {
			continue
		}
		var cands []*simPod
		for _, o := range s.pods {
			if o.node == n.name && o.deleteAt == 0 && o.priority < p.priority {
				cands = append(cands, o)
			}
		}
		slices.SortFunc(cands, func(a, b *simPod) int {
			if a.priority != b.priority {
				return int(a.priority - b.priority)
			}
			return b.created - a.created
		})
		f := s.free(n)
		var victims []*simPod
		for _, c := range cands {
			if p.req.fitsIn(f) {
				break
			}
			victims = append(victims, c)
			f = f.plus(c.req)
		}
		if !p.req.fitsIn(f) || len(victims) == 0 {
			continue
		}
		top := victims[len(victims)-1].priority
		if best == nil || top < bestPrio || (top == bestPrio && len(victims) < len(bestVictims)) {
			best, bestVictims, bestPrio = n, victims, top
		}
	}
	if best == nil {
		return
	}
	for _, v := range bestVictims {
		s.remove(v)
		if v.job != nil {
			s.seen["trainer preempted"]++
		}
	}
	p.nominated = best.name
}

// snapshot is what pkg/cluster would report for the simulated cluster.
func (s *sim) snapshot() (snapshot.Snapshot, []Job) {
	snap := snapshot.Snapshot{Trainers: map[string][]TrainerPod{}}
	counted := map[string]bool{}
	for _, n := range s.nodes {
		if n.cordoned {
			continue
		}
		counted[n.name] = true
		node := snapshot.Node{Name: n.name, Labels: n.labels, Taints: n.taints, Allocatable: n.alloc.resources()}
		free := n.alloc
		for _, p := range s.pods {
			if p.node != n.name || !s.live(p) {
				continue
			}
			free = free.minus(p.req)
			if p.deleteAt != 0 {
				node.Terminating = append(node.Terminating, snapshot.TerminatingPod{Request: p.req.resources(),
					Deadline: t0.Add(time.Duration(p.deleteAt) * time.Second), Trainer: p.job != nil})
			}
		}
		node.Free = free.resources()
		snap.Nodes = append(snap.Nodes, node)
		snap.NodeCount++
		snap.CPUTotalMilli += n.alloc[resCPU]
		snap.MemoryTotalMega += n.alloc[resMemory]
		snap.GPUTotal += n.alloc[resGPU]
	}
	for _, p := range s.pods {
		if !s.live(p) {
			continue
		}
		if counted[p.node] {
			snap.CPURequestMilli += p.req[resCPU]
			snap.MemoryRequestMega += p.req[resMemory]
			snap.GPURequest += p.req[resGPU]
		}
		unsched := p.node == "" && p.tried && p.deleteAt == 0 && !p.gated
		if owner := p.member; (owner != nil || p.job != nil) && p.node == "" && !unsched && p.deleteAt == 0 {
			if owner == nil {
				owner = p.job
			}
			snap.Unplaced = append(snap.Unplaced, snapshot.PendingPod{Namespace: "ns", Name: p.name, Priority: p.priority,
				Request: p.req.resources(), Job: owner.key, Trainer: p.job != nil, Created: t0.Add(time.Duration(p.created) * time.Second),
				Placement: owner.placement})
		}
		if unsched {
			pp := snapshot.PendingPod{Namespace: "ns", Name: p.name, Priority: p.priority, Request: p.req.resources(),
				Created: t0.Add(time.Duration(p.created) * time.Second), NominatedNode: p.nominated,
				Placement: p.placement, PreemptNever: p.never}
			if p.job != nil {
				pp.Job, pp.Trainer, pp.Placement = p.job.key, true, p.job.placement
			}
			if p.member != nil {
				pp.Job, pp.Placement = p.member.key, p.member.placement
			}
			snap.Pending = append(snap.Pending, pp)
		}
		if p.job != nil && p.deleteAt == 0 {
			phase := corev1.PodPending
			if p.node != "" {
				phase = corev1.PodRunning
			}
			snap.Trainers[p.job.key] = append(snap.Trainers[p.job.key], TrainerPod{Name: p.name, Node: p.node,
				Phase: phase, Unschedulable: unsched, Created: t0.Add(time.Duration(p.created) * time.Second),
				Request: p.req.resources(), Priority: p.priority})
		}
	}
	for _, ts := range snap.Trainers {
		slices.SortFunc(ts, func(a, b TrainerPod) int {
			if c := a.Created.Compare(b.Created); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	jobs := make([]Job, 0, len(s.jobs))
	for _, j := range s.jobs {
		if s.gang && !j.running {
			continue // the autoscaler plans only Running jobs
		}
		jobs = append(jobs, Job{Key: j.key, Min: j.min, Max: j.max, Current: j.replicas, Priority: j.priority,
			Request: j.req.resources(), LastScaleDown: j.scaleDown, Placement: j.placement})
	}
	return snap, JobsFromSnapshot(snap, jobs)
}

func objectMeta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: labels}
}

func (s *sim) job(key string) *simJob {
	for _, j := range s.jobs {
		if j.key == key {
			return j
		}
	}
	return nil
}
