package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProgressConfigMapName is the ConfigMap a job's training writes its
// progress into (the progress contract, docs/api.md): the controller
// creates it, and only the job's own trainers may write it.
func ProgressConfigMapName(job string) string { return job + "-progress" }

// ProgressServiceAccountName is the service account of a job's trainer
// pods: the one subject bound to the job's progress Role, which may get
// and patch the job's progress ConfigMap and nothing else.
func ProgressServiceAccountName(job string) string { return job + "-trainer" }

// The keys of the progress ConfigMap, each a decimal string. Done and
// Time are required; the training writes them all in one merge patch.
const (
	// ProgressDone is the work done so far, in ProgressUnit.
	ProgressDone = "done"
	// ProgressTotal is the work in all, when the training knows it.
	ProgressTotal = "total"
	// ProgressUnit is what the work counts: samples (the default) or steps.
	ProgressUnit = "unit"
	// ProgressBatch is the global batch, the samples of one step.
	ProgressBatch = "batch"
	// ProgressTrainers is the world size the training runs at.
	ProgressTrainers = "trainers"
	// ProgressNoiseScale is the gradient noise scale, for jobs whose
	// global batch grows with their trainers.
	ProgressNoiseScale = "noiseScale"
	// ProgressTime is the report's time, Unix seconds with a fraction.
	ProgressTime = "time"
	// ProgressRun names the process that wrote the report; it changes
	// when the training restarts.
	ProgressRun = "run"
)

// ProgressReportInterval is the least time between two writes of a job's
// progress: the helper (edl_progress.py) holds a report back until it has
// passed and writes only the latest.
const ProgressReportInterval = 10

// ProgressStatus is what EDL knows of a job's training from its progress
// reports: the last report, the throughput measured at each size the job
// ran at, the model fitted to them and the ETA.
type ProgressStatus struct {
	// Unit is what Done and Total count: samples or steps.
	// +optional
	Unit string `json:"unit,omitempty"`
	// Done is the work done at the last report.
	// +optional
	Done int64 `json:"done,omitempty"`
	// Total is the work in all; 0 when the training does not say.
	// +optional
	Total int64 `json:"total,omitempty"`
	// Percent is Done of Total, for kubectl's printer columns.
	// +optional
	Percent *int32 `json:"percent,omitempty"`
	// Batch is the global batch, the samples of a step; 0 when unknown.
	// +optional
	Batch int64 `json:"batch,omitempty"`
	// NoiseScale is the gradient noise scale the training last reported.
	// +optional
	NoiseScale *resource.Quantity `json:"noiseScale,omitempty"`
	// Trainers is the world size of the last report, Nodes the nodes its
	// trainers ran on.
	// +optional
	Trainers int32 `json:"trainers,omitempty"`
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// Run names the process that wrote the last report.
	// +optional
	Run string `json:"run,omitempty"`
	// RunWork and RunMillis are what Run measured so far, its first
	// interval (its warm-up) left out: once it has measured
	// progress.RunMeasured, the ETA is at its throughput.
	// +optional
	RunWork int64 `json:"runWork,omitempty"`
	// +optional
	RunMillis int64 `json:"runMillis,omitempty"`
	// Warm is true once Run's first interval has passed.
	// +optional
	Warm bool `json:"warm,omitempty"`
	// Reported is the time of the last report, by the training's clock.
	// +optional
	Reported metav1.MicroTime `json:"reported,omitempty"`
	// Throughput is the throughput at Trainers: measured, else predicted;
	// "812/s", for kubectl.
	// +optional
	Throughput string `json:"throughput,omitempty"`
	// ETA is the time the job had left at its last report: the work left
	// at the throughput, plus the cost of a restart when the job is being
	// resized. Empty without a Total or a throughput.
	// +optional
	ETA string `json:"eta,omitempty"`
	// FinishesAt is Reported plus the ETA.
	// +optional
	FinishesAt *metav1.Time `json:"finishesAt,omitempty"`
	// RestartCost is the last measured cost of a restart of the training
	// (a resize, or a failure): the time from the last report before it
	// to the first after it, less the time the work between them took,
	// plus the time to redo the work it lost.
	// +optional
	RestartCost *metav1.Duration `json:"restartCost,omitempty"`
	// Measured is the throughput at each size the job ran at, restarts
	// and each run's first interval (its warm-up) left out.
	// +listType=atomic
	// +optional
	Measured []SizeThroughput `json:"measured,omitempty"`
	// Model is the scaling model fitted to Measured.
	// +optional
	Model *ScalingModel `json:"model,omitempty"`
	// Error is why the last report was refused, naming the key.
	// +optional
	Error string `json:"error,omitempty"`
}

// SizeThroughput is the work a job did at one size and how long it took:
// Work/Millis×1000 is its throughput there.
type SizeThroughput struct {
	// Trainers is the world size.
	Trainers int32 `json:"trainers"`
	// Nodes is the nodes the trainers ran on.
	Nodes int32 `json:"nodes"`
	// Work is the work done, in the job's unit.
	Work int64 `json:"work"`
	// Millis is the milliseconds it took.
	Millis int64 `json:"millis"`
}

// ScalingModel is the Pollux model of a job's step time (pkg/scaling),
// fitted to its measured throughput: seconds, per sample where it says.
type ScalingModel struct {
	// GradBase is α_g, the gradient's fixed cost.
	GradBase resource.Quantity `json:"gradBase"`
	// GradPerSample is β_g, the gradient's cost per sample.
	GradPerSample resource.Quantity `json:"gradPerSample"`
	// SyncLocalBase is α_r, an all-reduce of two replicas on one node.
	SyncLocalBase resource.Quantity `json:"syncLocalBase"`
	// SyncLocalPerReplica is β_r, what a replica beyond two adds on one node.
	SyncLocalPerReplica resource.Quantity `json:"syncLocalPerReplica"`
	// SyncNetBase is α_n, an all-reduce of two replicas across nodes.
	SyncNetBase resource.Quantity `json:"syncNetBase"`
	// SyncNetPerReplica is β_n, what a replica beyond two adds across nodes.
	SyncNetPerReplica resource.Quantity `json:"syncNetPerReplica"`
	// Overlap is γ, how much of the synchronisation hides behind the
	// computation.
	Overlap resource.Quantity `json:"overlap"`
	// MaxTrainers is the largest size measured.
	MaxTrainers int32 `json:"maxTrainers"`
	// Sizes is how many of Measured the fit used.
	Sizes int32 `json:"sizes"`
	// FitError is the root mean square of the model's relative error on
	// the measurements.
	FitError resource.Quantity `json:"fitError"`
	// FittedMillis is the measured time (Measured's Millis summed) the fit
	// saw: the model is fitted again when a size is added, or once the
	// measured time has grown by half.
	FittedMillis int64 `json:"fittedMillis"`
}
