package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
)

// Scenario names an experiment.
type Scenario string

// The two experiments of the original report, one of pools and one of
// teams.
const (
	// Training: jobs only, submitted one by one.
	Training Scenario = "training"
	// Shared: jobs beside a higher-priority web service that shrinks and grows.
	Shared Scenario = "shared"
	// Pools: Shared on a cluster of two pools, CPU nodes and tainted GPU
	// nodes; CPU jobs and the web service (pinned to the CPU pool) share the
	// CPU pool, GPU jobs select and tolerate the GPU pool.
	Pools Scenario = "pools"
	// Teams: three teams of weights 2, 1 and 1 (the last with a
	// guarantee), each in its own namespace, alternately idle and
	// oversubscribed by bursts of elastic jobs.
	Teams Scenario = "teams"
)

// Mode says whether EDL scales the jobs.
type Mode string

const (
	// On runs edl with the autoscaler acting.
	On Mode = "edl"
	// Off runs edl with -dry_run: the controller runs the jobs, the
	// autoscaler only logs what it would do. In Training the jobs also ask
	// for their maximum (min-instance = max-instance).
	Off Mode = "no-edl"
)

// Variant is one way of running a scenario: EDL on or off, and what is
// tuned.
type Variant struct {
	Mode Mode
	// MaxLoadDesired is edl's -max_load_desired; 0 keeps its default, 0.97.
	MaxLoadDesired float64
	// BinPack runs kube-scheduler with the MostAllocated scoring strategy
	// (pack pods onto the fullest node that fits) instead of the default
	// LeastAllocated (spread them).
	BinPack bool
	// NoGang runs edl with -gang_admission=false: a job's pods are created
	// ungated and start as they fit, as before gang admission.
	NoGang bool
	// NoTeams runs Teams without TrainingQueues: every namespace is the
	// default team's, and EDL shares by job.
	NoTeams bool
	// Quota runs Teams without TrainingQueues, each team's namespace under
	// a static ResourceQuota of its weight's part of the cluster's CPU.
	Quota bool
}

// Label names the variant in file names and tables: "edl", "no-edl",
// "edl+load=0.85", "edl+binpack", "edl+noteams", "quota" (EDL on under
// static quotas), ...
func (v Variant) Label() string {
	l := string(v.Mode)
	if v.Quota {
		l = quotaLabel
		if v.Mode == Off {
			l = string(Off) + "+" + quotaLabel
		}
	}
	if v.MaxLoadDesired > 0 {
		l += "+load=" + strconv.FormatFloat(v.MaxLoadDesired, 'f', -1, 64)
	}
	if v.BinPack {
		l += "+binpack"
	}
	if v.NoGang {
		l += "+nogang"
	}
	if v.NoTeams {
		l += "+noteams"
	}
	return l
}

// quotaLabel is the variant of EDL on under static quotas; "edl+quota"
// parses to it too.
const quotaLabel = "quota"

// ParseVariant parses a Label.
func ParseVariant(label string) (Variant, error) {
	parts := strings.Split(label, "+")
	v := Variant{Mode: Mode(parts[0])}
	if parts[0] == quotaLabel {
		v = Variant{Mode: On, Quota: true}
	}
	if v.Mode != On && v.Mode != Off {
		return v, fmt.Errorf("variant %q: the mode must be %s, %s or %s", label, On, Off, quotaLabel)
	}
	for _, p := range parts[1:] {
		switch {
		case p == "binpack":
			v.BinPack = true
		case p == "nogang":
			v.NoGang = true
		case p == "noteams":
			v.NoTeams = true
		case p == quotaLabel:
			v.Quota = true
		case strings.HasPrefix(p, "load="):
			f, err := strconv.ParseFloat(strings.TrimPrefix(p, "load="), 64)
			if err != nil || f <= 0 || f > 1 {
				return v, fmt.Errorf("variant %q: load must be in (0, 1]", label)
			}
			v.MaxLoadDesired = f
		default:
			return v, fmt.Errorf("variant %q: unknown part %q (binpack, nogang, noteams, quota, load=X)", label, p)
		}
	}
	return v, nil
}

// Names of the objects the experiments create.
const (
	Namespace        = "experiment"
	TrainingPriority = "training"
	WebPriority      = "web"
	WebName          = "nginx"
	// WebLabel is the label key (value WebName) of the web pods.
	WebLabel = "app"
	// PoolLabel is the node label that names a node's pool in Pools
	// (values CPUPool and GPUPool).
	PoolLabel = "pool"
	CPUPool   = "cpu"
	GPUPool   = "gpu"
)

// GPUTaint is the taint of the GPU pool's nodes, as NVIDIA's GPU operator
// sets it.
var GPUTaint = corev1.Taint{Key: string(framework.GPUResource), Value: "present", Effect: corev1.TaintEffectNoSchedule}

// Priorities of the two PriorityClasses.
const (
	TrainingPriorityValue = 100
	WebPriorityValue      = 1000
)

// PodSize is the request of one pod.
type PodSize struct {
	CPU    string
	Memory string
	// GPU is the number of nvidia.com/gpu; 0 asks for none.
	GPU int64
}

func (s PodSize) cpuMilli() int64 { return milli(s.CPU) }
func (s PodSize) memMiB() int64   { return mebi(s.Memory) }

// demand is up to max pods of this size (at least lo).
func (s PodSize) demand(name string, lo, hi int) PodDemand {
	return PodDemand{Name: name, CPUMilli: s.cpuMilli(), MemMiB: s.memMiB(), GPU: s.GPU, Min: lo, Max: hi}
}

func milli(q string) int64 {
	v := resource.MustParse(q)
	return v.MilliValue()
}

func mebi(q string) int64 {
	v := resource.MustParse(q)
	return v.Value() >> 20
}

// resources are the pod's requests; a GPU, an extended resource, is also
// its limit, as Kubernetes requires.
func (s PodSize) resources() corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(s.CPU),
		corev1.ResourceMemory: resource.MustParse(s.Memory),
	}}
	if s.GPU > 0 {
		gpu := *resource.NewQuantity(s.GPU, resource.DecimalSI)
		r.Requests[framework.GPUResource] = gpu
		r.Limits = corev1.ResourceList{framework.GPUResource: gpu}
	}
	return r
}

// The pod sizes of the original report.
var (
	TrainerSize = PodSize{CPU: "5", Memory: "8Gi"}
	PserverSize = PodSize{CPU: "4", Memory: "5Gi"}
	// WebSize is our choice (the report does not give one): a node of 18
	// CPUs holds three trainers and one web pod exactly, so a perfect packer
	// can fill the cluster and the utilization target is reachable.
	WebSize = PodSize{CPU: "3", Memory: "2Gi"}
	// GPUTrainerSize is a trainer of the GPU jobs in Pools: one GPU and a
	// share of the GPU node's CPU and memory, so that a node's eight GPUs,
	// not its CPU, bound how many run on it.
	GPUTrainerSize = PodSize{CPU: "6", Memory: "32Gi", GPU: 1}
)

// Size is the shape and the timing of a run. Every duration is already
// compressed; Compression says by how much against the original.
type Size struct {
	Name       string
	Nodes      int
	NodeCPU    string
	NodeMemory string
	NodePods   int
	// Interval is edl's -autoscale_interval and the sampling period.
	Interval time.Duration
	// Compression is the original's autoscale interval (5 s) over Interval;
	// every other duration is scaled by it.
	Compression float64

	// Training.
	Jobs        int
	JobInterval time.Duration // between two submissions
	TrainerMin  int32
	TrainerMax  int32
	Pservers    int32
	Settle      time.Duration // observed after the last submission

	// Shared.
	SharedJobs       int
	SharedTrainerMin int32
	SharedTrainerMax int32
	// WebSteps are the web replicas at each step; the first is the level
	// the jobs are submitted beside.
	WebSteps []int32
	Step     time.Duration // how long each level is held

	// Pools; Step as in Shared.
	Pools PoolsSize

	// Teams.
	Teams TeamsSize
}

// TeamsSize is the jobs and the schedule of Teams, on the size's nodes.
type TeamsSize struct {
	// Phase is how long each phase of the schedule lasts.
	Phase time.Duration
	// Burst is how many jobs a team submits at once when it turns busy,
	// each with the size's Pservers and TrainerMin..TrainerMax trainers;
	// they are deleted (they end) when it turns idle.
	Burst                  int
	TrainerMin, TrainerMax int32
	// Busy is each team's schedule, in TeamSpecs' order: one character a
	// phase, 'X' busy, '.' idle.
	Busy []string
}

// TeamSpec is one team of Teams.
type TeamSpec struct {
	Name   string
	Weight int32
	// Guarantee is the part of the cluster's CPU the team's minimums are
	// guaranteed; 0 for none.
	Guarantee float64
}

// TeamSpecs are the teams of Teams: weights 2, 1 and 1, team c with a
// guarantee of a fifth of the cluster's CPU (below the quarter its weight
// gives it while every team is busy).
var TeamSpecs = []TeamSpec{{Name: "a", Weight: 2}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1, Guarantee: 0.2}}

// TeamNamespace is the namespace of a team of Teams.
func TeamNamespace(team string) string { return "team-" + team }

// TeamJobName is the name of the team's i-th job (from 0): "a-01".
func TeamJobName(team string, i int) string { return fmt.Sprintf("%s-%02d", team, i+1) }

// teamsSchedule is the schedule of the quick and full sizes: each team
// alternately busy and idle, its bursts starting one phase after the
// previous team's, so that team b and team c each twice turn busy while
// the others hold the cluster, and every team is busy in three phases of
// nine.
var teamsSchedule = []string{
	"XXX..XXXX",
	".XXX..XXX",
	"..XXX..XX",
}

// PoolsSize is the cluster and the jobs of Pools. The CPU nodes have the
// size's NodeCPU, NodeMemory and NodePods.
type PoolsSize struct {
	CPUNodes, GPUNodes int
	// GPUNodeCPU, GPUNodeMemory and GPUsPerNode are one GPU node's.
	GPUNodeCPU, GPUNodeMemory string
	GPUsPerNode               int64
	// CPUJobs have trainers of TrainerSize, GPUJobs of GPUTrainerSize; every
	// job has the size's Pservers of PserverSize.
	CPUJobs, GPUJobs             int
	CPUTrainerMin, CPUTrainerMax int32
	GPUTrainerMin, GPUTrainerMax int32
	// WebSteps are the web replicas at each step, on the CPU pool.
	WebSteps []int32
}

// Sizes are the sizes make experiment knows.
var Sizes = map[string]Size{
	// full is the original's cluster (133 nodes of 18 CPU, 2,394 cores) and
	// job counts, 2.5 times faster: the autoscaler plans every 2 s instead of
	// 5 s, jobs arrive every 4 s instead of 10 s, a web step lasts 36 s
	// instead of 90 s.
	"full": {
		Name: "full", Nodes: 133, NodeCPU: "18", NodeMemory: "100Gi", NodePods: 110,
		Interval: 2 * time.Second, Compression: 2.5,
		Jobs: 20, JobInterval: 4 * time.Second, TrainerMin: 2, TrainerMax: 60, Pservers: 2, Settle: 120 * time.Second,
		SharedJobs: 6, SharedTrainerMin: 15, SharedTrainerMax: 60,
		WebSteps: []int32{400, 300, 200, 100, 200, 300, 400}, Step: 36 * time.Second,
		// Pools: 100 CPU nodes and 32 GPU nodes of 8 GPUs; the web service
		// scaled to the CPU pool (three quarters of the shared one).
		Pools: PoolsSize{CPUNodes: 100, GPUNodes: 32, GPUNodeCPU: "64", GPUNodeMemory: "512Gi", GPUsPerNode: 8,
			CPUJobs: 4, CPUTrainerMin: 15, CPUTrainerMax: 60, GPUJobs: 5, GPUTrainerMin: 8, GPUTrainerMax: 64,
			WebSteps: []int32{300, 225, 150, 75, 150, 225, 300}},
		// Teams: three jobs a burst, each of which could use half the
		// cluster, so that one team alone oversubscribes it.
		Teams: TeamsSize{Phase: 30 * time.Second, Burst: 3, TrainerMin: 2, TrainerMax: 200, Busy: teamsSchedule},
	},
	// quick is the same experiment on a fifth of the cluster (27 nodes) with
	// a fifth of the trainers and web pods, and shorter steps.
	"quick": {
		Name: "quick", Nodes: 27, NodeCPU: "18", NodeMemory: "100Gi", NodePods: 110,
		Interval: 2 * time.Second, Compression: 2.5,
		Jobs: 20, JobInterval: 4 * time.Second, TrainerMin: 2, TrainerMax: 12, Pservers: 2, Settle: 60 * time.Second,
		SharedJobs: 6, SharedTrainerMin: 3, SharedTrainerMax: 12,
		WebSteps: []int32{80, 60, 40, 20, 40, 60, 80}, Step: 20 * time.Second,
		Pools: PoolsSize{CPUNodes: 20, GPUNodes: 6, GPUNodeCPU: "64", GPUNodeMemory: "512Gi", GPUsPerNode: 8,
			CPUJobs: 3, CPUTrainerMin: 3, CPUTrainerMax: 12, GPUJobs: 2, GPUTrainerMin: 4, GPUTrainerMax: 32,
			WebSteps: []int32{60, 45, 30, 15, 30, 45, 60}},
		Teams: TeamsSize{Phase: 20 * time.Second, Burst: 2, TrainerMin: 2, TrainerMax: 60, Busy: teamsSchedule},
	},
	// smoke is the tiny run of the test: five nodes, two jobs that fit at
	// their minimum with room to grow, a web wave of three steps.
	"smoke": {
		Name: "smoke", Nodes: 5, NodeCPU: "18", NodeMemory: "100Gi", NodePods: 110,
		Interval: time.Second, Compression: 5,
		Jobs: 2, JobInterval: 2 * time.Second, TrainerMin: 2, TrainerMax: 6, Pservers: 2, Settle: 10 * time.Second,
		SharedJobs: 2, SharedTrainerMin: 2, SharedTrainerMax: 6,
		WebSteps: []int32{8, 4, 8}, Step: 8 * time.Second,
		Pools: PoolsSize{CPUNodes: 3, GPUNodes: 2, GPUNodeCPU: "64", GPUNodeMemory: "512Gi", GPUsPerNode: 8,
			CPUJobs: 1, CPUTrainerMin: 2, CPUTrainerMax: 6, GPUJobs: 1, GPUTrainerMin: 2, GPUTrainerMax: 12,
			WebSteps: []int32{6, 3, 6}},
		// Teams: team a alone, then b beside it, then every team.
		Teams: TeamsSize{Phase: 6 * time.Second, Burst: 1, TrainerMin: 2, TrainerMax: 12, Busy: []string{"XXX", ".XX", "..X"}},
	},
}

// SizeNames lists the sizes, sorted.
func SizeNames() []string {
	var names []string
	for n := range Sizes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupSize returns the named size.
func LookupSize(name string) (Size, error) {
	s, ok := Sizes[name]
	if !ok {
		return Size{}, fmt.Errorf("unknown size %q: one of %s", name, strings.Join(SizeNames(), ", "))
	}
	return s, nil
}

func (s Size) node() NodeShape {
	return NodeShape{
		CPUMilli: milli(s.NodeCPU),
		MemMiB:   mebi(s.NodeMemory),
		Pods:     s.NodePods,
	}
}

func (s Size) gpuNode() NodeShape {
	return NodeShape{
		CPUMilli: milli(s.Pools.GPUNodeCPU),
		MemMiB:   mebi(s.Pools.GPUNodeMemory),
		GPU:      s.Pools.GPUsPerNode,
		Pods:     s.NodePods,
	}
}

// NodeSpecs are the nodes of the scenario's cluster: one pool of the size's
// nodes, or in Pools the labelled CPU pool and the labelled, tainted GPU
// pool.
func (s Size) NodeSpecs(scenario Scenario) []framework.NodeSpec {
	if scenario != Pools {
		return []framework.NodeSpec{{Name: "node", CPU: s.NodeCPU, Memory: s.NodeMemory, Pods: s.NodePods, Count: s.Nodes}}
	}
	return []framework.NodeSpec{
		{Name: CPUPool, CPU: s.NodeCPU, Memory: s.NodeMemory, Pods: s.NodePods, Count: s.Pools.CPUNodes,
			Labels: map[string]string{PoolLabel: CPUPool}},
		{Name: GPUPool, CPU: s.Pools.GPUNodeCPU, Memory: s.Pools.GPUNodeMemory, Pods: s.NodePods, GPU: s.Pools.GPUsPerNode,
			Count: s.Pools.GPUNodes, Labels: map[string]string{PoolLabel: GPUPool}, Taints: []corev1.Taint{GPUTaint}},
	}
}

// JobName is the name of the i-th job (from 0) of a run.
func JobName(i int) string { return fmt.Sprintf("job-%02d", i+1) }

// GPUJobName is the name of the i-th GPU job (from 0) of Pools.
func GPUJobName(i int) string { return fmt.Sprintf("gpu-%02d", i+1) }

// GPUJob builds a GPU job of Pools: trainers of GPUTrainerSize; every pod
// selects the GPU pool and tolerates its taint.
func GPUJob(name string, trainerMin, trainerMax, pservers int32) *v1.TrainingJob {
	job := NewJob(name, Namespace, trainerMin, trainerMax, pservers, GPUTrainerSize, PserverSize)
	job.Spec.NodeSelector = map[string]string{PoolLabel: GPUPool}
	job.Spec.Tolerations = []corev1.Toleration{{Key: GPUTaint.Key, Operator: corev1.TolerationOpExists, Effect: GPUTaint.Effect}}
	return job
}

// TrainingJob builds a job of the experiments: trainers and pservers of the
// report's sizes, at the training priority, in Namespace.
func TrainingJob(name string, trainerMin, trainerMax, pservers int32) *v1.TrainingJob {
	return NewJob(name, Namespace, trainerMin, trainerMax, pservers, TrainerSize, PserverSize)
}

// NewJob builds a fault-tolerant TrainingJob at the training priority. Its
// master requests nothing, so that the CPU it asks for is exactly its
// trainers' and pservers'.
func NewJob(name, namespace string, trainerMin, trainerMax, pservers int32, trainer, pserver PodSize) *v1.TrainingJob {
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			FaultTolerant:     true,
			PriorityClassName: TrainingPriority,
			Trainer: v1.TrainerSpec{
				Entrypoint:  "python train.py",
				Workspace:   "/workspace",
				MinInstance: trainerMin,
				MaxInstance: trainerMax,
				Resources:   trainer.resources(),
			},
			Pserver: v1.PserverSpec{
				MinInstance: pservers,
				MaxInstance: pservers,
				Resources:   pserver.resources(),
			},
		},
	}
}

// WebDeployment is the higher-priority web service: replicas nginx pods of
// size at the web priority.
func WebDeployment(namespace string, replicas int32, size PodSize) *appsv1.Deployment {
	labels := map[string]string{WebLabel: WebName}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: WebName, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName:             WebPriority,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name:      "nginx",
						Image:     "nginx",
						Resources: size.resources(),
					}},
				},
			},
		},
	}
}
