package scale

import (
	"fmt"
	"math"
	"time"

	"github.com/paddlepaddle/edl/test/experiment"
)

// Config is the size and timing of a scale run.
type Config struct {
	// Nodes kwok nodes of NodeCPU CPU / NodeMemory, NodePods pods each.
	Nodes      int
	NodeCPU    int
	NodeMemory string
	NodePods   int
	// Jobs TrainingJobs spread round-robin over Namespaces namespaces.
	Jobs, Namespaces int
	// Interval is edl's -autoscale_interval.
	Interval time.Duration
	// Steady is the window over which the steady state is measured.
	Steady time.Duration
	// SettleTimeout bounds each wait for the jobs to reach their targets.
	SettleTimeout time.Duration
	// EDLFlags are more flags for edl, after those every run gives it
	// (an A/B of one of its options); none by default.
	EDLFlags []string `json:",omitempty"`
}

// DefaultConfig is what make scale runs without knobs.
var DefaultConfig = Config{
	Nodes: 300, NodeCPU: 12, NodeMemory: "32Gi", NodePods: 110,
	Jobs: 50, Namespaces: 5,
	Interval: 5 * time.Second, Steady: 2 * time.Minute, SettleTimeout: 8 * time.Minute,
}

// The pods of a scale run. Trainers are small so that many fit; a web pod
// is four trainers.
var (
	TrainerSize = experiment.PodSize{CPU: "500m", Memory: "1Gi"}
	PserverSize = experiment.PodSize{CPU: "500m", Memory: "1Gi"}
	WebSize     = experiment.PodSize{CPU: "2", Memory: "2Gi"}
)

const (
	trainerMilli = 500
	pserverMilli = 500
	webMilli     = 2000
	// loadDesired is edl's default -max_load_desired.
	loadDesired = 0.97
	// TrainerMin is every job's min-instance; it has one pserver.
	TrainerMin = 2
)

// Validate checks the knobs, naming the first bad one.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("nodes: %d, want at least 1", c.Nodes)
	case c.NodeCPU < 3:
		return fmt.Errorf("node CPU: %d, want at least 3 (a web pod takes 2)", c.NodeCPU)
	case c.Jobs < 1:
		return fmt.Errorf("jobs: %d, want at least 1", c.Jobs)
	case c.Namespaces < 1 || c.Namespaces > c.Jobs:
		return fmt.Errorf("namespaces: %d, want 1 to the number of jobs (%d)", c.Namespaces, c.Jobs)
	case c.Interval <= 0 || c.Steady <= 0 || c.SettleTimeout <= 0:
		return fmt.Errorf("interval, steady window and settle timeout must be positive")
	}
	if c.TrainerMax() < TrainerMin {
		return fmt.Errorf("jobs: %d do not fit %d nodes beside the web service at their minimum", c.Jobs, c.Nodes)
	}
	return nil
}

// WebReplicas is the web service's full size: a third of the cluster's CPU.
func (c Config) WebReplicas() int32 {
	return int32(min(c.Nodes*c.NodeCPU*1000/3/webMilli, math.MaxInt32)) // #nosec G115 -- clamped to int32
}

// WebShrunk is the web service shrunk by a third.
func (c Config) WebShrunk() int32 { return c.WebReplicas() - c.WebReplicas()/3 }

// TrainerMax is every job's max-instance: together the jobs ask a quarter
// more trainers than the cluster holds beside the full web service at edl's
// load target, so that the web service's wave moves them.
func (c Config) TrainerMax() int32 {
	room := loadDesired*float64(c.Nodes*c.NodeCPU*1000) - float64(int(c.WebReplicas())*webMilli) - float64(c.Jobs*pserverMilli)
	return int32(math.Ceil(1.25 * room / trainerMilli / float64(c.Jobs)))
}

// Namespace is the i-th namespace of the jobs.
func Namespace(i int) string { return fmt.Sprintf("scale-%02d", i) }

// WebNamespace holds the web Deployment.
const WebNamespace = "web"
