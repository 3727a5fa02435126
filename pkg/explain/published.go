package explain

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/pkg/progress"
)

// liveReads are the cluster-wide reads planning live needs: what the
// controller's informers list and watch.
var liveReads = []authorizationv1.ResourceAttributes{
	{Verb: "list", Resource: "nodes"},
	{Verb: "list", Resource: "pods"},
	{Verb: "list", Resource: "resourcequotas"},
	{Verb: "list", Group: "apps", Resource: "replicasets"},
	{Verb: "list", Group: "scheduling.k8s.io", Resource: "priorityclasses"},
	{Verb: "list", Group: v1.SchemeGroupVersion.Group, Resource: "trainingjobs"},
}

// CannotPlanLive says why the user may not plan live — the first
// cluster-wide read the API server does not allow, as "list nodes" — or ""
// when every one is allowed. A namespace's editor may not: the
// explanation is then what the controller published ([Published]).
func CannotPlanLive(ctx context.Context, reviews authorizationclient.SelfSubjectAccessReviewsGetter) (string, error) {
	for _, attrs := range liveReads {
		r, err := reviews.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("ask the API server what the user may read: %w", err)
		}
		if !r.Status.Allowed {
			what := attrs.Resource
			if attrs.Group != "" {
				what += "." + attrs.Group
			}
			return "list " + what + " in every namespace", nil
		}
	}
	return "", nil
}

// PublishedResult is the explanation of jobs from what the controller
// wrote in their status, without planning: what a user who may read only
// the jobs can see.
type PublishedResult struct {
	// Source says where the explanation comes from, and Reason why it is
	// not a live plan.
	Source string         `json:"source"`
	Reason string         `json:"reason,omitempty"`
	Jobs   []PublishedJob `json:"jobs"`
}

// PublishedJob is one job as its status tells it.
type PublishedJob struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	// Trainers are the trainers asked for, running and ready; Min and Max
	// the job's range.
	Trainers v1.ReplicaStatus `json:"trainers"`
	Min      int32            `json:"min"`
	Max      int32            `json:"max"`
	// Limit and Message are the reason and message of the autoscaler's
	// Scaling condition: what limits the job's trainers after the last
	// plan; Since is when the reason last changed.
	Limit   string     `json:"limit,omitempty"`
	Message string     `json:"message,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	// Queued, while the job waits for admission, is the Queued condition's
	// reason and message: its place and what it waits for.
	Queued    string `json:"queued,omitempty"`
	QueueNote string `json:"queueNote,omitempty"`
	// LastScale is the autoscaler's last scaling of the job.
	LastScale *v1.ScaleRecord `json:"lastScale,omitempty"`
	// Progress is what the job's training reports, measured and predicted.
	Progress progress.Explanation `json:"progress"`
}

// Published reads the jobs of namespace ns (or only job name in it) and
// explains each from its status; reason says why it is not a live plan. An
// unknown job is a *JobNotFoundError.
func Published(ctx context.Context, tj tjclient.Interface, ns, name, reason string) (PublishedResult, error) {
	res := PublishedResult{Source: "each job's status, as the controller last wrote it", Reason: reason}
	var jobs []v1.TrainingJob
	if name != "" {
		job, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return res, &JobNotFoundError{Namespace: ns, Name: name}
			}
			return res, err
		}
		jobs = append(jobs, *job)
	} else {
		list, err := tj.PaddlepaddleV1().TrainingJobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return res, err
		}
		jobs = list.Items
	}
	slices.SortFunc(jobs, func(a, b v1.TrainingJob) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for i := range jobs {
		res.Jobs = append(res.Jobs, publishedJob(&jobs[i]))
	}
	return res, nil
}

func publishedJob(job *v1.TrainingJob) PublishedJob {
	p := PublishedJob{Namespace: job.Namespace, Name: job.Name, Phase: string(job.Status.Phase), Trainers: job.Status.Trainers,
		Min: job.Spec.Trainer.MinInstance, Max: job.Spec.Trainer.MaxInstance, LastScale: job.Status.LastScale,
		Progress: progress.Explain(job.Status.Progress, job.Status.Trainers.Desired)}
	if c := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionScaling); c != nil {
		since := c.LastTransitionTime.UTC()
		p.Limit, p.Message, p.Since = c.Reason, c.Message, &since
	}
	if c := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue {
		p.Queued, p.QueueNote = c.Reason, c.Message
	}
	return p
}

// PrintPublished writes res in format: a block per job ("table", "wide" or
// ""), or JSON or YAML; namespace is the one the jobs were read from, for
// the sentence of an empty result.
func PrintPublished(w io.Writer, res PublishedResult, format, namespace string) error {
	if done, err := printData(w, res, format); done {
		return err
	}
	var b strings.Builder
	if len(res.Jobs) == 0 {
		fmt.Fprintf(&b, "No TrainingJobs in namespace %s.\n\n", namespace)
	}
	for _, j := range res.Jobs {
		phase := j.Phase
		if phase == "" {
			phase = "not started"
		}
		fmt.Fprintf(&b, "%s/%s (%s)\n", j.Namespace, j.Name, phase)
		fmt.Fprintf(&b, "  trainers     %d asked for (%d ready), min %d, max %d\n", j.Trainers.Desired, j.Trainers.Ready, j.Min, j.Max)
		if j.Queued != "" {
			fmt.Fprintf(&b, "  queue        %s: %s\n", j.Queued, j.QueueNote)
		}
		if j.Limit != "" {
			fmt.Fprintf(&b, "  limited by   %s: %s (since %s)\n", j.Limit, j.Message, j.Since.Format(time.RFC3339))
		}
		if s := j.LastScale; s != nil {
			fmt.Fprintf(&b, "  last scaling %d -> %d at %s: %s\n", s.From, s.To, s.Time.UTC().Format(time.RFC3339), s.Reason)
		}
		b.WriteString(j.Progress.Text())
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "from %s", res.Source)
	if res.Reason != "" {
		fmt.Fprintf(&b, ": planning live needs the right to %s", res.Reason)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
