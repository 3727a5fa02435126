package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// Queue is the admission queue as kubectl edl queue prints it.
type Queue struct {
	Jobs []QueuedJob `json:"jobs"`
}

// QueuedJob is one TrainingJob that waits for admission.
type QueuedJob struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Team is the team (TrainingQueue) whose share the job's namespace
	// draws on, "default" for a namespace no queue names; empty on a
	// cluster without TrainingQueues.
	Team string `json:"team,omitempty"`
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

// teamsOf maps each namespace a TrainingQueue names to the queue's team;
// a namespace two queues name is the default team's, as the autoscaler
// plans it until one lets go. Nil without queues.
func teamsOf(queues []v1.TrainingQueue) map[string]string {
	if len(queues) == 0 {
		return nil
	}
	teams := map[string]string{}
	for _, q := range queues {
		for _, ns := range q.Spec.Namespaces {
			if other, ok := teams[ns]; ok && other != q.Name {
				teams[ns] = v1.DefaultTeam
				continue
			}
			teams[ns] = q.Name
		}
	}
	return teams
}

// byTeam groups q by team, each team's jobs in queue order, the teams by
// name; q unchanged when teams is nil (no TrainingQueue).
func byTeam(q Queue, teams map[string]string) Queue {
	if teams == nil {
		return q
	}
	for i := range q.Jobs {
		q.Jobs[i].Team = v1.DefaultTeam
		if t, ok := teams[q.Jobs[i].Namespace]; ok {
			q.Jobs[i].Team = t
		}
	}
	sort.SliceStable(q.Jobs, func(i, j int) bool { return q.Jobs[i].Team < q.Jobs[j].Team })
	return q
}

// listTeams reads the TrainingQueues' teams; nil, with no error, when the
// user may not list them or the cluster has no TrainingQueue API: the queue
// is then shown without teams.
func listTeams(ctx context.Context, c tjclient.Interface) (map[string]string, error) {
	list, err := c.PaddlepaddleV1().TrainingQueues().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list TrainingQueues: %w", err)
	}
	return teamsOf(list.Items), nil
}

// printQueue writes q as a table (TEAM with TrainingQueues, grouped by
// team; NAMESPACE with -A; wide adds the priority class and the trainer
// range), JSON or YAML.
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
	teams := q.Jobs[0].Team != ""
	if teams {
		header = "TEAM\t" + header
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
		if teams {
			row = j.Team + "\t" + row
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
only on nodes kept for the head of the queue) or Preempted. With TrainingQueues, the
jobs are grouped by TEAM, the team whose share their namespace draws on ("default" for
a namespace no queue names). The jobs of the current namespace, or -n, or -A.`,
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
			teams, err := listTeams(ctx, c.tj)
			if err != nil {
				return err
			}
			q := byTeam(queueOf(list.Items, time.Now()), teams)
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
