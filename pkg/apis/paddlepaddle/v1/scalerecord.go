package v1

import (
	"encoding/json"
	"strconv"
	"time"
)

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

// AnnotationScaleDownTo, on a trainer ReplicaSet of a job whose trainers
// leave its host list before their pods go (Horovod), is the count a
// scale-down the autoscaler decided lowers it to. The autoscaler marks the
// trainers it removes and writes this instead of the replicas; the
// controller drops them from the host list and lowers the replicas once
// every master pod carries the list's new version (AnnotationHostsVersion)
// and HostsSettle passed, or HostsDropTimeout after the decision.
const AnnotationScaleDownTo = "edl.paddlepaddle.org/scale-down-to"

// HostsDropTimeout bounds a pending scale-down (AnnotationScaleDownTo):
// past it the controller lowers the replicas without the masters'
// acknowledgement, with a Warning event, since a yield to pods of a higher
// priority must not wait on a master that cannot be reached.
const HostsDropTimeout = 15 * time.Second

// ScaleDownTo is the pending scale-down of a trainer ReplicaSet's
// annotations: its count, and false when there is none or it cannot be
// read.
func ScaleDownTo(annotations map[string]string) (int32, bool) {
	s, ok := annotations[AnnotationScaleDownTo]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}
