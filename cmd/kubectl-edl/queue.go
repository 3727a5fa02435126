package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Queue is the admission queue as kubectl edl queue prints it.
type Queue struct {
	Jobs []QueuedJob `json:"jobs"`
}

// QueuedJob is one TrainingJob that waits for admission.
type QueuedJob struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Position is the job's place in the cluster's queue (1 is next), of
	// Of; 0 when the autoscaler has not placed it yet.
	Position int `json:"position"`
	Of       int `json:"of"`
	// PriorityClassName is the job's class; the queue serves the highest
	// priority first, then the oldest job.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Created is when the job was submitted, WaitingSeconds how long ago.
	Created        metav1.Time `json:"created"`
	WaitingSeconds int64       `json:"waitingSeconds"`
	// Reason is the Queued condition's reason: why it waits, in a word
	// (WaitingForAdmission, WaitingForQuota, ExceedsQuota, Unplaceable,
	// ReservedForHead, Preempted).
	Reason string `json:"reason"`
	// Cause is what the job waits for, with the numbers: the Queued
	// condition's message without its place in the queue.
	Cause string `json:"cause"`
	// MinTrainers and MaxTrainers are the job's trainer range.
	MinTrainers int32 `json:"minTrainers"`
	MaxTrainers int32 `json:"maxTrainers"`
}

// position is how the autoscaler's message starts: "position 2 of 5 in the
// queue: ".
var position = regexp.MustCompile(`^position (\d+) of (\d+) in the queue: `)

// queueOf lists the jobs of list that wait for admission (condition Queued
// True, not suspended, not finished: the jobs the autoscaler's queue
// holds), by their place in the queue.
func queueOf(jobs []v1.TrainingJob, now time.Time) Queue {
	q := Queue{Jobs: []QueuedJob{}}
	for i := range jobs {
		tj := &jobs[i]
		c := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionQueued)
		if c == nil || c.Status != metav1.ConditionTrue || tj.Spec.Suspend ||
			tj.Status.Phase == v1.PhaseSucceeded || tj.Status.Phase == v1.PhaseFailed {
			continue
		}
		e := QueuedJob{Namespace: tj.Namespace, Name: tj.Name, PriorityClassName: tj.Spec.PriorityClassName,
			Created: tj.CreationTimestamp, WaitingSeconds: int64(now.Sub(tj.CreationTimestamp.Time).Seconds()),
			Reason: c.Reason, Cause: c.Message, MinTrainers: tj.Spec.Trainer.MinInstance, MaxTrainers: tj.Spec.Trainer.MaxInstance}
		if m := position.FindStringSubmatch(c.Message); m != nil {
			e.Position, _ = strconv.Atoi(m[1])
			e.Of, _ = strconv.Atoi(m[2])
			e.Cause = c.Message[len(m[0]):]
		}
		q.Jobs = append(q.Jobs, e)
	}
	sort.SliceStable(q.Jobs, func(i, j int) bool {
		a, b := q.Jobs[i], q.Jobs[j]
		if (a.Position == 0) != (b.Position == 0) {
			return b.Position == 0 // placed ones first
		}
		if a.Position != b.Position {
			return a.Position < b.Position
		}
		if !a.Created.Equal(&b.Created) {
			return a.Created.Before(&b.Created)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return q
}

// printQueue writes q as a table (NAMESPACE with -A; wide adds the priority
// class and the trainer range), JSON or YAML.
func printQueue(w, errOut io.Writer, q Queue, output, ns string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(q)
	case "yaml":
		data, err := yaml.Marshal(q)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	if len(q.Jobs) == 0 {
		where := ""
		if ns != "" {
			where = " in namespace " + ns
		}
		_, err := fmt.Fprintf(errOut, "No TrainingJobs wait for admission%s.\n", where)
		return err
	}
	tw := printers.GetNewTabWriter(w)
	header := "NAME\tPOSITION\tWAITING\tREASON\t"
	if ns == "" {
		header = "NAMESPACE\t" + header
	}
	if output == "wide" {
		header += "PRIORITY CLASS\tTRAINERS\t"
	}
	fmt.Fprintln(tw, header+"CAUSE")
	for _, j := range q.Jobs {
		pos := "-"
		if j.Position > 0 {
			pos = fmt.Sprintf("%d/%d", j.Position, j.Of)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t", j.Name, pos, duration.HumanDuration(time.Duration(j.WaitingSeconds)*time.Second), j.Reason)
		if ns == "" {
			row = j.Namespace + "\t" + row
		}
		if output == "wide" {
			class := j.PriorityClassName
			if class == "" {
				class = "<none>"
			}
			row += fmt.Sprintf("%s\t%d..%d\t", class, j.MinTrainers, j.MaxTrainers)
		}
		fmt.Fprintln(tw, row+j.Cause)
	}
	return tw.Flush()
}

func newQueueCommand(r *root) *cobra.Command {
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "The TrainingJobs waiting for admission, in queue order, and what each waits for",
		Long: `Lists the TrainingJobs that wait for admission (phase Queued): their place in the cluster's
queue (the highest priority first, then the oldest), how long they have waited, and what each
waits for, as the autoscaler last wrote it in the job's Queued condition: REASON is
WaitingForAdmission (room on nodes), WaitingForQuota, ExceedsQuota (above a quota's hard
limit), Unplaceable (a pod bigger than every node it may use), ReservedForHead (it fits
only on nodes kept for the head of the queue) or Preempted. The jobs of the current
namespace, or -n, or -A.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			ns, c, err := r.open(ctx, all)
			if err != nil {
				return err
			}
			list, err := c.tj.PaddlepaddleV1().TrainingJobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("list TrainingJobs: %w", err)
			}
			q := queueOf(list.Items, time.Now())
			if done, err := printTemplated(r.streams.Out, output, q); done {
				return err
			}
			return printQueue(r.streams.Out, r.streams.ErrOut, q, output, ns)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the jobs of every namespace")
	outputFlag(cmd, &output)
	return cmd
}
