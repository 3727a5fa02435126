package v1

// The defaults of a TrainingJob. The CRD's schema applies the same values on
// the API server (a test keeps the two equal); the Go function exists for
// objects that reached the store without the schema's defaults, and for tests.
const (
	DefaultPort              int32 = 7164
	DefaultPortsNum          int32 = 1
	DefaultPortsNumForSparse int32 = 1
	DefaultMaxRestarts       int32 = 5
)

// SetDefaults_TrainingJob fills in the fields a job file may leave out. The
// defaulted fields are pointers, so that an explicit 0 is kept (and, where 0
// is invalid, rejected by Validate as the API server rejects it).
func SetDefaults_TrainingJob(job *TrainingJob) {
	spec := &job.Spec
	defaultInt32(&spec.Port, DefaultPort)
	defaultInt32(&spec.PortsNum, DefaultPortsNum)
	defaultInt32(&spec.PortsNumForSparse, DefaultPortsNumForSparse)
	defaultInt32(&spec.Trainer.MaxRestarts, DefaultMaxRestarts)
	if spec.Framework == "" {
		spec.Framework = FrameworkPaddlePaddle
	}
	if p := spec.ElasticPolicy; p != nil {
		if p.RdzvBackend == "" {
			p.RdzvBackend = DefaultRdzvBackend
		}
		defaultInt32(&p.RdzvPort, DefaultRdzvPort)
		defaultInt32(&p.NProcPerNode, DefaultNProcPerNode)
		defaultInt32(&p.MaxRestarts, DefaultElasticBudget)
		if p.HostDiscovery != nil {
			defaultInt32(&p.HostDiscovery.SlotsPerHost, DefaultSlotsPerHost)
		}
	}
}

func defaultInt32(field **int32, v int32) {
	if *field == nil {
		*field = &v
	}
}

func valueOr(field *int32, v int32) int32 {
	if field == nil {
		return v
	}
	return *field
}

// FirstPort is port after defaulting.
func (s *TrainingJobSpec) FirstPort() int32 { return valueOr(s.Port, DefaultPort) }

// DensePorts is ports_num after defaulting.
func (s *TrainingJobSpec) DensePorts() int32 { return valueOr(s.PortsNum, DefaultPortsNum) }

// TrainerPasses is the number of passes the trainers run: trainer.passes, or
// the job-level passes when that is unset (the original's example put it
// under trainer, its documentation at the top).
func (s *TrainingJobSpec) TrainerPasses() int32 {
	if s.Trainer.Passes != 0 {
		return s.Trainer.Passes
	}
	return s.Passes
}

// SparsePorts is ports_num_for_sparse after defaulting.
func (s *TrainingJobSpec) SparsePorts() int32 {
	return valueOr(s.PortsNumForSparse, DefaultPortsNumForSparse)
}

// TrainerMaxRestarts is trainer.max-restarts after defaulting.
func (s *TrainingJobSpec) TrainerMaxRestarts() int32 {
	return valueOr(s.Trainer.MaxRestarts, DefaultMaxRestarts)
}

// DefaultQueueWeight is a TrainingQueue's weight when spec.weight is unset,
// and the default team's.
const DefaultQueueWeight int32 = 1

// QueueWeight is spec.weight after defaulting.
func (s *TrainingQueueSpec) QueueWeight() int32 { return valueOr(s.Weight, DefaultQueueWeight) }
