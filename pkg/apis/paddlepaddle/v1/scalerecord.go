package v1

import "encoding/json"

// AnnotationLastScale, on a job's trainer ReplicaSet, is the autoscaler's
// last scaling of the job: the JSON of its ScaleRecord, set by the same
// patch that sets the replicas. The job's status.lastScale follows in a
// second write, which a restart of EDL or a change of leader can prevent;
// the record on the ReplicaSet is never lost, and the autoscaler copies it
// into the status when the status lacks it.
const AnnotationLastScale = "edl.paddlepaddle.org/last-scale"

// LastScaleAnnotation is r as AnnotationLastScale holds it.
func LastScaleAnnotation(r ScaleRecord) string {
	b, _ := json.Marshal(r) // a ScaleRecord always marshals
	return string(b)
}

// LastScaleOf parses the AnnotationLastScale of annotations: nil when it is
// absent or holds no record, as a hand-edited one may.
func LastScaleOf(annotations map[string]string) *ScaleRecord {
	s, ok := annotations[AnnotationLastScale]
	if !ok {
		return nil
	}
	var r ScaleRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.Time.IsZero() {
		return nil
	}
	return &r
}

// SameScale reports whether a and b record the same scaling: the same time,
// to the second a record keeps, and the same counts and reason.
func SameScale(a, b ScaleRecord) bool {
	return a.Time.Unix() == b.Time.Unix() && a.From == b.From && a.To == b.To && a.Reason == b.Reason
}
