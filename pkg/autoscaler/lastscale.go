package autoscaler

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// A scaling is recorded twice. The patch that sets the trainer
// ReplicaSet's replicas also sets its v1.AnnotationLastScale, so the
// record cannot be lost; the job's status (lastScale, and lastScaleDown
// for a scale-down) follows in a second write, which a restart of EDL, a
// change of leader or a refusal of the API server can prevent. The
// controller counts a job's resizes from status.lastScale and measures
// their cost from it, and the planner holds the cool-downs from it, so the
// autoscaler reads the newer of the two records and copies into the status
// a record only the ReplicaSet holds.

// lastScaleOf is the job's last scaling — the newer of its
// status.lastScale and the record on its trainer ReplicaSet rs — and
// whether it is the ReplicaSet's alone, missing from the status. Every
// scaling writes the ReplicaSet first, so a record there that is not older
// than the status's and differs from it is the later one.
func lastScaleOf(tj *v1.TrainingJob, rs *appsv1.ReplicaSet) (*v1.ScaleRecord, bool) {
	status, annotated := tj.Status.LastScale, v1.LastScaleOf(rs.Annotations)
	switch {
	case annotated == nil:
		return status, false
	case status == nil:
		return annotated, true
	case annotated.Time.Unix() < status.Time.Unix() || v1.SameScale(*annotated, *status):
		return status, false
	}
	return annotated, true
}

// unrecorded is last, a scaling only the trainer ReplicaSet of tj holds,
// as the status is to record it; nil when this replica wrote it into the
// status already and the job informer has not caught up with that write.
func (a *Autoscaler) unrecorded(tj *v1.TrainingJob, last *v1.ScaleRecord) *scaling {
	a.writtenMu.Lock()
	wrote, ok := a.recorded[writtenKey(tj)]
	a.writtenMu.Unlock()
	if ok && v1.SameScale(wrote, *last) {
		return nil
	}
	return &scaling{record: *last, coolDown: last.To < last.From}
}

// noteRecorded remembers that the status of job holds s.
func (a *Autoscaler) noteRecorded(job *v1.TrainingJob, s *scaling) {
	a.writtenMu.Lock()
	defer a.writtenMu.Unlock()
	if a.recorded == nil {
		a.recorded = map[string]v1.ScaleRecord{}
	}
	a.recorded[writtenKey(job)] = s.record
}

// withUnrecorded adds to the scalings applied the records that only the
// trainer ReplicaSets hold, for recordScalings to copy into the statuses;
// a job scaled again in this cycle gets the new record instead.
func (d applied) withUnrecorded(unrecorded map[string]*scaling) applied {
	for job, s := range unrecorded {
		if _, ok := d.scaled[job]; !ok {
			d.scaled[job] = s
		}
	}
	return d
}

// lastScaleOp is the JSON patch operation that puts the record r on a
// ReplicaSet whose annotations are annotations: into them, or as the first
// when it has none.
func lastScaleOp(annotations map[string]string, r v1.ScaleRecord) map[string]any {
	value := v1.LastScaleAnnotation(r)
	if annotations == nil {
		return map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{v1.AnnotationLastScale: value}}
	}
	return map[string]any{"op": "add", "path": annotationPath(v1.AnnotationLastScale), "value": value}
}

// annotationPath is the JSON pointer of an object's annotation key.
func annotationPath(key string) string {
	return "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
