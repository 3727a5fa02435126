// Package testcorpus holds the corpus of invalid TrainingJobs that both the
// API server (through the CRD's schema) and the controller (through
// v1.Validate, for objects that bypassed the schema) must reject, naming the
// field. Each file starts with two comment lines:
//
//	# field: spec.trainer.min-instance
//	# message: greater than or equal to 1
//
// the field the rejection must name and a phrase of the API server's message.
package testcorpus

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"path"
	"strings"
)

//go:embed invalid/*.yaml
var files embed.FS

// Job is one invalid job of the corpus.
type Job struct {
	Name    string // file name without .yaml; also the job's metadata.name
	Field   string // the field the rejection names
	Message string // a phrase of the API server's message
	YAML    []byte
}

// InvalidJobs returns the corpus, sorted by name.
func InvalidJobs() ([]Job, error) {
	entries, err := files.ReadDir("invalid")
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(entries))
	for _, e := range entries {
		data, err := files.ReadFile(path.Join("invalid", e.Name()))
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
			}
		}
		if job.Field == "" || job.Message == "" {
			return nil, fmt.Errorf("%s: the '# field:' and '# message:' header lines are required", e.Name())
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}
