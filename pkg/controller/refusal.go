package controller

import (
	"errors"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// refusal is the API server's refusal of something the job needs: a
// ReplicaSet or Service the controller creates or patches, or the pods a
// ReplicaSet creates.
type refusal struct {
	// reason is the kind of refusal, a reason of the ChildrenAccepted condition.
	reason string
	// line says what was refused, with the server's message.
	line string
	// pods: the ReplicaSet controller's pods were refused, not one of the
	// job's own objects.
	pods bool
}

// maxServerMessage bounds the server's message kept in a refusal, so that
// a few of them fit in a condition's message.
const maxServerMessage = 1024

// refusalOf tells whether err is the API server refusing a write of the
// job's objects, as opposed to a failure that may pass by itself (a timeout,
// a conflict, an unavailable server). A refusal is retried too, since a
// quota or a policy may change, but it is reported on the job.
func refusalOf(err error) (refusal, bool) {
	var reason string
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		reason = v1.ReasonQuotaExceeded
	case apierrors.IsForbidden(err):
		reason = v1.ReasonForbidden
	case apierrors.IsInvalid(err):
		reason = v1.ReasonInvalid
	case apierrors.IsBadRequest(err):
		reason = v1.ReasonBadRequest
	case apierrors.IsRequestEntityTooLargeError(err):
		reason = v1.ReasonRefused
	default:
		return refusal{}, false
	}
	return refusal{reason: reason, line: "the API server refused to " + truncate(err.Error(), maxServerMessage)}, true
}

// podRefusal reads a ReplicaSet's ReplicaFailure condition: the ReplicaSet
// controller sets it when the API server refuses the pods it creates (a
// ResourceQuota, an admission policy), and clears it once a create succeeds.
func podRefusal(rs *appsv1.ReplicaSet) (refusal, bool) {
	for _, c := range rs.Status.Conditions {
		if c.Type != appsv1.ReplicaSetReplicaFailure || c.Status != corev1.ConditionTrue || c.Reason != "FailedCreate" {
			continue
		}
		reason := v1.ReasonRefused
		switch {
		case strings.Contains(c.Message, "exceeded quota"):
			reason = v1.ReasonQuotaExceeded
		case strings.Contains(c.Message, "is forbidden"):
			reason = v1.ReasonForbidden
		case strings.Contains(c.Message, "is invalid"):
			reason = v1.ReasonInvalid
		}
		return refusal{reason: reason, pods: true,
			line: "the API server refused to create a pod of ReplicaSet " + rs.Name + ": " + truncate(c.Message, maxServerMessage)}, true
	}
	return refusal{}, false
}

// objectRefusals are the refusals of the job's own objects.
func objectRefusals(refused []refusal) []refusal {
	var out []refusal
	for _, r := range refused {
		if !r.pods {
			out = append(out, r)
		}
	}
	return out
}

func refusalMessage(refused []refusal) string {
	lines := make([]string, len(refused))
	for i, r := range refused {
		lines[i] = r.line
	}
	return strings.Join(lines, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// refusedError is a sync error the job's status reports: it is retried,
// but neither logged above debug nor counted as a failed sync.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// onlyRefusals: every error joined in err is a refusal.
func onlyRefusals(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyRefusals(e) {
				return false
			}
		}
		return len(joined.Unwrap()) > 0
	}
	var r *refusedError
	return errors.As(err, &r)
}
