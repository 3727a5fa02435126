// Package testcorpus holds the corpus of TrainingJobs that the API server
// (through the CRD's schema), the controller (through v1.Validate) and the
// objects the controller derives from a job are tested against.
//
// Every invalid job (invalid/*.yaml) must be rejected naming the field. Each
// file starts with comment lines:
//
//	# field: spec.trainer.min-instance
//	# message: greater than or equal to 1
//	# schema: admits
//	# derived: refused
//
// the field the rejection must name, a phrase of the rejection's message;
// only for a rule the CRD's CEL cannot check within its cost budget,
// "schema: admits": the API server stores such a job, and the controller
// fails it as Invalid, naming the field, with v1.Validate's message; and
// "derived: refused" when the API server refuses an object the controller
// would derive from the job (a ReplicaSet, a Service or a pod), which marks
// the rules that protect those objects from the rules that are EDL's own.
//
// Every valid job (valid/*.yaml) must be accepted by both, and the API
// server must accept the objects the controller derives from it; edge cases
// of the rules (the longest name, the highest port range) belong here.
package testcorpus

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"path"
	"strings"
)

//go:embed invalid/*.yaml valid/*.yaml
var files embed.FS

// Job is one job of the corpus.
type Job struct {
	Name string // file name without .yaml; also the job's metadata.name where that is valid
	// Field is the field an invalid job's rejection names.
	Field string
	// Message is a phrase of the rejection's message: the API server's, or
	// v1.Validate's when the schema admits the job.
	Message string
	// SchemaAdmits marks an invalid job that only v1.Validate rejects: its
	// rule is beyond the CRD's CEL cost budget.
	SchemaAdmits bool
	// DerivedRefused marks an invalid job whose derived objects the API
	// server refuses.
	DerivedRefused bool
	YAML           []byte
}

// InvalidJobs returns the invalid jobs, sorted by name.
func InvalidJobs() ([]Job, error) {
	jobs, err := read("invalid")
	if err != nil {
		return nil, err
	}
	for _, job := range jobs {
		if job.Field == "" || job.Message == "" {
			return nil, fmt.Errorf("invalid/%s.yaml: the '# field:' and '# message:' header lines are required", job.Name)
		}
	}
	return jobs, nil
}

// ValidJobs returns the valid jobs, sorted by name.
func ValidJobs() ([]Job, error) {
	jobs, err := read("valid")
	if err != nil {
		return nil, err
	}
	for _, job := range jobs {
		if job.Field != "" || job.Message != "" || job.SchemaAdmits || job.DerivedRefused {
			return nil, fmt.Errorf("valid/%s.yaml: a valid job has no '# field:', '# message:', '# schema:' or '# derived:' header", job.Name)
		}
	}
	return jobs, nil
}

func read(dir string) ([]Job, error) {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(entries))
	for _, e := range entries {
		data, err := files.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		job := Job{Name: strings.TrimSuffix(e.Name(), ".yaml"), YAML: data}
		scanner := bufio.NewScanner(bytes.NewReader(data))
		for scanner.Scan() {
			line := scanner.Text()
			if v, ok := strings.CutPrefix(line, "# field: "); ok {
				job.Field = v
			} else if v, ok := strings.CutPrefix(line, "# message: "); ok {
				job.Message = v
			} else if v, ok := strings.CutPrefix(line, "# schema: "); ok {
				if v != "admits" {
					return nil, fmt.Errorf("%s/%s: the only '# schema:' header is 'admits'", dir, e.Name())
				}
				job.SchemaAdmits = true
			} else if v, ok := strings.CutPrefix(line, "# derived: "); ok {
				if v != "refused" {
					return nil, fmt.Errorf("%s/%s: the only '# derived:' header is 'refused'", dir, e.Name())
				}
				job.DerivedRefused = true
			}
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}
