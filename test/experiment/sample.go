package experiment

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
)

// JobView is one job in a Sample.
type JobView struct {
	Name  string
	Phase v1.TrainingJobPhase
	// Running counts the trainer pods Running and not being deleted;
	// Desired is the trainer ReplicaSet's replicas as the job's status has it.
	Running, Desired int
	Min, Max         int
	// Fulfillment is (Running − Min) / (Max − Min), 1 when Min == Max.
	Fulfillment float64
}

// Sample is the cluster at one instant.
type Sample struct {
	// At is the time since the recorder's origin.
	At time.Duration
	// Utilization is Σ CPU requests of Running pods not being deleted ÷ Σ
	// allocatable CPU. A pod being deleted is counted nowhere — neither
	// here, nor in the demand or the rooms of the bounds — and its CPU is
	// CPUDeletingMilli.
	Utilization      float64
	CPURunningMilli  int64
	CPUDeletingMilli int64
	CPUAllocMilli    int64
	// CPUPendingMilli is Σ CPU requests of the live pods not Running: with
	// CPURunningMilli it is the load the autoscaler compares with
	// max_load_desired.
	CPUPendingMilli int64
	// CPUHeldWaitingMilli is Σ CPU requests of the Running pods (not being
	// deleted) of the jobs not Running (nor finished): what jobs that cannot
	// run yet hold; HeldWaiting splits it by role.
	CPUHeldWaitingMilli int64
	HeldWaiting         RoleMilli
	// Ideal is the utilization a perfect packer reaches with the demand of
	// this instant (filled in by the scenario; 0 when not computed).
	Ideal float64
	// Submitted jobs, of which Pending are not in phase Running.
	Submitted, PendingJobs int
	Jobs                   []JobView
	// RunningTrainers counts all Running trainer pods.
	RunningTrainers int
	// Web pods: the Deployment's replicas (set by the scenario), Running, and
	// pending (not Running and not being deleted).
	WebDesired, WebRunning, WebPending int
	// PendingPods counts every pod not Running and not being deleted.
	PendingPods int
	// WebHeld[k] counts the nodes with k web pods bound (and not being
	// deleted): where kube-scheduler put the web service. At most
	// WebDesired are counted: at a down-step the web pods above it, not yet
	// deleted, are left out from the nodes with the most web pods first, as
	// the ReplicaSet controller picks them (capWeb), here and in the rooms.
	WebHeld []int
	// IdealAround is the packing bound with the web pods held where
	// WebHeld has them (filled in by the scenario; 0 when not computed).
	IdealAround float64
	// WebFixedHeld is WebHeld of the web pods placed before the first job
	// was submitted, and IdealFixed the packing bound with only those held
	// where they run: what EDL cannot influence (filled in by the
	// scenario).
	WebFixedHeld []int
	IdealFixed   float64
	// TrainerRooms is the room the nodes leave for trainers once every
	// other pod runs where it is bound, and HeldMilli the CPU those pods
	// request; IdealTrainers is the bound of the trainers packed into it
	// (filled in by the scenario).
	TrainerRooms  []Room
	HeldMilli     int64
	IdealTrainers float64
	// Pools are the node pools (nodes labelled PoolLabel), by name; none
	// when no node has the label.
	Pools []PoolSample
	// Teams are the teams (Recorder.SetTeams), by name; none without.
	Teams []TeamSample
	// LiveJobs counts the jobs neither deleted nor finished;
	// OrphanTrainers and OrphanPservers the Running pods (not being
	// deleted) of jobs deleted already, which the garbage collector has
	// not reached yet.
	LiveJobs                       int
	OrphanTrainers, OrphanPservers int
}

// RoleMilli is an amount of CPU (millicores) split by the role of the pods
// that request it.
type RoleMilli struct {
	Master, Pserver, Trainer int64
}

// add counts cpu for the role.
func (m *RoleMilli) add(role v1.Role, cpu int64) {
	switch role {
	case v1.RoleMaster:
		m.Master += cpu
	case v1.RolePserver:
		m.Pserver += cpu
	default:
		m.Trainer += cpu
	}
}

// heldColumn is the samples CSV's column of the CPU the waiting jobs' pods
// of role hold.
func heldColumn(role v1.Role) string {
	return "cpu_held_waiting_" + role.Name() + "_milli"
}

// Useful is the utilization less the CPU held by jobs that wait: Σ CPU
// requests of the Running pods of the jobs that run, and of every other
// Running pod, ÷ Σ allocatable CPU.
func (s Sample) Useful() float64 {
	if s.CPUAllocMilli == 0 {
		return 0
	}
	return float64(s.CPURunningMilli-s.CPUHeldWaitingMilli) / float64(s.CPUAllocMilli)
}

// PoolSample is one node pool at one instant.
type PoolSample struct {
	Name  string
	Nodes int
	// Allocatable of the pool's nodes, the requests of the Running pods
	// (not being deleted) bound to them, and of those of them that belong
	// to jobs not Running.
	CPUAllocMilli, CPURunningMilli      int64
	GPUAlloc, GPURunning                int64
	CPUHeldWaitingMilli, GPUHeldWaiting int64
	// Ideal is the pool's packing bound of its Resource (filled in by the
	// scenario); IdealAround and IdealTrainers as Sample's, over the pool's
	// nodes.
	Ideal, IdealAround, IdealTrainers, IdealFixed float64
	WebHeld, WebFixedHeld                         []int
	TrainerRooms                                  []Room
	HeldMilli                                     int64
}

// Resource is what the pool's utilization counts: GPUs in a pool that has
// them, CPU otherwise.
func (p PoolSample) Resource() Resource {
	if p.GPUAlloc > 0 {
		return GPU
	}
	return CPU
}

// Utilization is Σ requests of Running pods ÷ Σ allocatable of the pool's
// Resource.
func (p PoolSample) Utilization() float64 {
	used, alloc := p.CPURunningMilli, p.CPUAllocMilli
	if p.Resource() == GPU {
		used, alloc = p.GPURunning, p.GPUAlloc
	}
	if alloc == 0 {
		return 0
	}
	return float64(used) / float64(alloc)
}

// Useful is Utilization less what the jobs not Running hold.
func (p PoolSample) Useful() float64 {
	used, alloc := p.CPURunningMilli-p.CPUHeldWaitingMilli, p.CPUAllocMilli
	if p.Resource() == GPU {
		used, alloc = p.GPURunning-p.GPUHeldWaiting, p.GPUAlloc
	}
	if alloc == 0 {
		return 0
	}
	return float64(used) / float64(alloc)
}

// poolUsage sums, per pool (the value of the nodes' label key), the
// allocatable of its nodes and the requests of the Running pods bound to
// them (those of the waiting jobs apart too), sorted by name. web is the
// web pods held by node, dropped the web pods above the desired count
// (capWeb). Nodes without the label are in no pool.
func poolUsage(nodes []*corev1.Node, pods []*corev1.Pod, web webCounts, waiting map[string]bool, key string) []PoolSample {
	byName := map[string]*PoolSample{}
	poolOf := map[string]*PoolSample{} // by node name
	for _, n := range nodes {
		name, ok := n.Labels[key]
		if !ok {
			continue
		}
		p := byName[name]
		if p == nil {
			p = &PoolSample{Name: name}
			byName[name] = p
		}
		p.Nodes++
		p.CPUAllocMilli += n.Status.Allocatable.Cpu().MilliValue()
		gpu := n.Status.Allocatable[framework.GPUResource]
		p.GPUAlloc += gpu.Value()
		p.WebHeld = held(p.WebHeld, web.held[n.Name])
		p.WebFixedHeld = held(p.WebFixedHeld, web.fixed[n.Name])
		poolOf[n.Name] = p
	}
	for _, pod := range pods {
		p := poolOf[pod.Spec.NodeName]
		if p == nil || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		p.CPURunningMilli += podCPUMilli(pod)
		p.GPURunning += podGPU(pod)
		if job, _, ok := v1.JobOf(pod.Labels); ok && waiting[job] {
			p.CPUHeldWaitingMilli += podCPUMilli(pod)
			p.GPUHeldWaiting += podGPU(pod)
		}
	}
	members := map[*PoolSample][]*corev1.Node{}
	for _, n := range nodes {
		if p := poolOf[n.Name]; p != nil {
			members[p] = append(members[p], n)
		}
	}
	out := make([]PoolSample, 0, len(byName))
	for _, p := range byName {
		p.TrainerRooms, p.HeldMilli = trainerRooms(members[p], pods, web.dropped)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b PoolSample) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// webCounts are the web pods bound, by node: held (at most the desired
// count), fixed (of them, those placed before the first job), and dropped
// (those above the desired count, left out).
type webCounts struct {
	held, fixed, dropped map[string]int
}

// held counts one more node with k web pods in the histogram h.
func held(h []int, k int) []int {
	if k >= len(h) {
		h = append(h, make([]int, k+1-len(h))...)
	}
	h[k]++
	return h
}

// capWeb leaves at most desired web pods in web (the live web pods bound,
// by node), taking the others one at a time from the node with the most
// (the lowest name of those on a tie), as the ReplicaSet controller picks
// the pods of a scale-down; it returns how many it took from each node.
// At a down-step the bounds then hold only the web pods wanted, the same
// count the ideal bound places.
func capWeb(web map[string]int, desired int) (dropped map[string]int) {
	total := 0
	names := make([]string, 0, len(web))
	for name, k := range web {
		total += k
		names = append(names, name)
	}
	slices.Sort(names)
	dropped = map[string]int{}
	for ; total > max(desired, 0); total-- {
		most := ""
		for _, name := range names {
			if most == "" || web[name] > web[most] {
				most = name
			}
		}
		web[most]--
		dropped[most]++
	}
	return dropped
}

// Sample takes a sample of the cluster now.
func (r *Recorder) Sample(now time.Time) Sample {
	r.mu.Lock()
	s := Sample{At: now.Sub(r.origin), WebDesired: r.webDesired, Submitted: len(r.submitted)}
	submitted := make(map[string]bool, len(r.submitted))
	first := time.Duration(-1)
	for name, at := range r.submitted {
		submitted[name] = true
		if first < 0 || at < first {
			first = at
		}
	}
	// The web pods seen before the first job was submitted: placed on a
	// cluster EDL had no say in.
	beforeJobs := map[string]bool{}
	for uid, w := range r.web {
		if first >= 0 && w.Created < first {
			beforeJobs[uid] = true
		}
	}
	r.mu.Unlock()

	nodes, _ := r.nodes.List(labels.Everything())
	for _, n := range nodes {
		s.CPUAllocMilli += n.Status.Allocatable.Cpu().MilliValue()
	}
	jobs, _ := r.jobs.List(labels.Everything())
	waiting := map[string]bool{}
	listed := map[string]bool{}
	r.mu.Lock()
	teamOf := r.teams
	r.mu.Unlock()
	teams := map[string]*TeamSample{}
	for _, name := range teamOf {
		teams[name] = &TeamSample{Name: name}
	}
	for _, j := range jobs {
		listed[j.Name] = true
		switch j.Status.Phase {
		case v1.PhaseRunning, v1.PhaseSucceeded, v1.PhaseFailed:
		default:
			waiting[j.Name] = true
		}
		if j.DeletionTimestamp != nil || j.Status.Phase == v1.PhaseSucceeded || j.Status.Phase == v1.PhaseFailed {
			continue
		}
		s.LiveJobs++
		if t := teams[teamOf[j.Namespace]]; t != nil {
			t.DemandMilli += j.Spec.Pserver.Resources.Requests.Cpu().MilliValue()*int64(j.Spec.Pserver.MaxInstance) +
				j.Spec.Trainer.Resources.Requests.Cpu().MilliValue()*int64(j.Spec.Trainer.MaxInstance)
		}
	}
	pods, _ := r.pods.List(labels.Everything())
	running := map[string]int{}
	web := map[string]int{}   // web pods bound, by node
	fixed := map[string]int{} // of them, those placed before the first job
	for _, p := range pods {
		isRunning := p.Status.Phase == corev1.PodRunning
		switch {
		case isRunning && p.DeletionTimestamp != nil:
			s.CPUDeletingMilli += podCPUMilli(p)
		case isRunning:
			s.CPURunningMilli += podCPUMilli(p)
			job, role, ok := v1.JobOf(p.Labels)
			if ok && waiting[job] {
				s.CPUHeldWaitingMilli += podCPUMilli(p)
				s.HeldWaiting.add(role, podCPUMilli(p))
			}
			if ok && !listed[job] {
				switch role {
				case v1.RoleTrainer:
					s.OrphanTrainers++
				case v1.RolePserver:
					s.OrphanPservers++
				}
			}
			if t := teams[teamOf[p.Namespace]]; t != nil {
				t.CPURunningMilli += podCPUMilli(p)
				if p.Labels[v1.LabelTrainer] != "" {
					t.Trainers++
				}
			}
		}
		live := isLive(p)
		if live && !isRunning {
			s.PendingPods++
			s.CPUPendingMilli += podCPUMilli(p)
		}
		if job := p.Labels[v1.LabelTrainer]; job != "" && isRunning && p.DeletionTimestamp == nil {
			running[job]++
			s.RunningTrainers++
		}
		if p.Labels[WebLabel] == WebName {
			if live && p.Spec.NodeName != "" {
				web[p.Spec.NodeName]++
				if beforeJobs[string(p.UID)] {
					fixed[p.Spec.NodeName]++
				}
			}
			switch {
			case isRunning:
				s.WebRunning++
			case live:
				s.WebPending++
			}
		}
	}
	if s.CPUAllocMilli > 0 {
		s.Utilization = float64(s.CPURunningMilli) / float64(s.CPUAllocMilli)
	}
	dropped := capWeb(web, s.WebDesired)
	for node, k := range fixed {
		fixed[node] = min(k, web[node]) // of the web pods held, never more
	}
	for _, n := range nodes {
		s.WebHeld = held(s.WebHeld, web[n.Name])
		s.WebFixedHeld = held(s.WebFixedHeld, fixed[n.Name])
	}
	s.TrainerRooms, s.HeldMilli = trainerRooms(nodes, pods, dropped)
	if pools := poolUsage(nodes, pods, webCounts{web, fixed, dropped}, waiting, PoolLabel); len(pools) > 0 {
		s.Pools = pools
	}
	if r.queues != nil {
		queues, _ := r.queues.List(labels.Everything())
		for _, q := range queues {
			if t := teams[q.Name]; t != nil {
				t.DeservedMilli = q.Status.Deserved.Cpu().MilliValue()
			}
		}
	}
	for _, t := range teams {
		s.Teams = append(s.Teams, *t)
	}
	slices.SortFunc(s.Teams, func(a, b TeamSample) int { return strings.Compare(a.Name, b.Name) })

	for _, j := range jobs {
		v := JobView{
			Name: j.Name, Phase: j.Status.Phase,
			Running: running[j.Name], Desired: int(j.Status.Trainers.Desired),
			Min: int(j.Spec.Trainer.MinInstance), Max: int(j.Spec.Trainer.MaxInstance),
			Fulfillment: 1,
		}
		if v.Max > v.Min {
			v.Fulfillment = float64(v.Running-v.Min) / float64(v.Max-v.Min)
		}
		s.Jobs = append(s.Jobs, v)
		if len(submitted) == 0 || submitted[j.Name] {
			if j.Status.Phase != v1.PhaseRunning {
				s.PendingJobs++
			}
		}
	}
	if len(submitted) == 0 {
		s.Submitted = len(jobs)
	}
	slices.SortFunc(s.Jobs, func(a, b JobView) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return s
}

// podGPU is the pod's GPU request, as podCPUMilli counts CPU.
func podGPU(p *corev1.Pod) int64 {
	return podRequest(p, func(r corev1.ResourceList) int64 {
		q := r[framework.GPUResource]
		return q.Value()
	})
}

// isLive reports whether the pod is neither being deleted nor finished.
func isLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podCPUMilli is the pod's CPU request as the scheduler counts it: the sum
// over its containers, or the largest init container if that is more.
func podCPUMilli(p *corev1.Pod) int64 {
	return podRequest(p, func(r corev1.ResourceList) int64 { return r.Cpu().MilliValue() })
}

// podRequest is the amount of a resource (of, read from a container's
// requests) the scheduler counts for the pod: the sum over its containers,
// or the largest init container if that is more.
func podRequest(p *corev1.Pod, of func(corev1.ResourceList) int64) int64 {
	var sum, initMax int64
	for _, c := range p.Spec.Containers {
		sum += of(c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		initMax = max(initMax, of(c.Resources.Requests))
	}
	return max(sum, initMax)
}
