package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/config"
)

// Formats are the outputs Print writes: a block per job ("table", or ""),
// the same with the whole configuration ("wide"), or the Result as JSON or
// YAML.
var Formats = []string{"table", "wide", "json", "yaml"}

// Print writes res in format; namespace is the one the jobs were filtered
// by ("" for all), for the sentence of an empty report.
func Print(w io.Writer, res Result, format, namespace string) error {
	if done, err := printData(w, res, format); done {
		return err
	}
	var b strings.Builder
	r := res.Report
	if len(r.Jobs) == 0 {
		where := "in the cluster"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		fmt.Fprintf(&b, "No TrainingJobs %s.\n\n", where)
	}
	var interval time.Duration
	if res.Configuration != nil {
		interval = res.Configuration.Planner().Interval
	}
	for _, j := range r.Jobs {
		writeJob(&b, j, interval)
	}
	b.WriteString(queueText(r))
	b.WriteString(teamsText(r.Teams))
	b.WriteString(clusterText(r) + "\n")
	if res.Configuration != nil {
		fmt.Fprintf(&b, "options: %s (from %s)\n", optionsText(res.Configuration, format == "wide"), res.Source)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJob(b *strings.Builder, j autoscaler.JobReport, interval time.Duration) {
	phase := j.Phase
	if phase == "" {
		phase = "not started"
	}
	fmt.Fprintf(b, "%s/%s (%s, priority %d)\n", j.Namespace, j.Name, phase, j.Priority)
	fmt.Fprintf(b, "  trainers     %d asked for (%d running), min %d, max %d\n", j.From, j.Running, j.Min, j.Max)
	if j.Phase == "Running" && j.Limit != planner.LimitNotElastic {
		fmt.Fprintf(b, "  fulfillment  %s (%d placed after the next cycle)\n", formatRatio(j.Fulfillment), j.Placed)
	}
	next := "nothing"
	if j.Next != nil {
		next = fmt.Sprintf("%d -> %d (%s): %s", j.Next.From, j.Next.To, j.Next.Cause, j.Next.Reason)
	}
	fmt.Fprintf(b, "  next cycle   %s\n", next)
	limit := string(j.Limit)
	if j.Limit == planner.LimitCoolDown && interval > 0 {
		cycles := int(math.Ceil(float64(j.CoolDownLeft) / float64(interval)))
		limit += fmt.Sprintf(" (%d cycles, %v left)", cycles, j.CoolDownLeft.Round(time.Second))
	}
	fmt.Fprintf(b, "  limited by   %s: %s\n", limit, j.Message)
	b.WriteString(j.Progress.Text() + "\n")
}

// queueText lists the admission queue: what the next cycle admits and
// preempts, and each job it leaves waiting, with its place and what it
// waits for; "" when there is none.
func queueText(r autoscaler.Report) string {
	if len(r.Queue) == 0 && len(r.Admitted) == 0 && len(r.Preempted) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("queue:\n")
	for _, a := range r.Admitted {
		fmt.Fprintf(&b, "  admitted     %s: %s\n", a.Job, a.Reason)
	}
	for _, p := range r.Preempted {
		fmt.Fprintf(&b, "  preempted    %s (priority %d) for %s (priority %d): %s\n", p.Job, p.Priority, p.By, p.ByPriority, p.Reason)
	}
	for _, w := range r.Queue {
		kind := w.Kind
		if w.Head {
			kind += ", head of the queue: its nodes are reserved"
		}
		fmt.Fprintf(&b, "  waiting      %s (%s): %s\n", w.Job, kind, w.Reason)
	}
	return b.String() + "\n"
}

// teamsText lists the teams' shares after the next cycle: what each
// deserves, uses, and borrows from idle teams or lends them; "" without
// TrainingQueues.
func teamsText(teams []autoscaler.TeamReport) string {
	if len(teams) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("teams:\n")
	for _, t := range teams {
		fmt.Fprintf(&b, "  %s", t.Team)
		if len(t.Namespaces) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(t.Namespaces, ", "))
		}
		fmt.Fprintf(&b, "\n    deserved   %s\n    used       %s\n", t.Deserved, t.Used)
		switch {
		case !t.Borrowed.IsZero():
			fmt.Fprintf(&b, "    borrowed   %s\n", t.Borrowed)
		case !t.Lent.IsZero():
			fmt.Fprintf(&b, "    lent       %s\n", t.Lent)
		}
	}
	return b.String() + "\n"
}

// optionsText lists the planner's fields of c, or every field when all.
func optionsText(c *config.EDLConfiguration, all bool) string {
	var parts []string
	for _, f := range config.Fields {
		if !all && !strings.HasPrefix(f.Path, "autoscaler.") && f.Path != "gpuResources" {
			continue
		}
		if v, ok := f.Get(c); ok {
			parts = append(parts, f.Path+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func clusterText(r autoscaler.Report) string {
	c := r.Cluster
	var loads []string
	for _, name := range []string{"CPU", "memory", "GPU"} {
		if l, ok := c.Load[name]; ok {
			loads = append(loads, name+" "+formatRatio(l))
		}
	}
	return fmt.Sprintf("cluster: %d nodes; allocatable %s; requested %s; load %s (max_load_desired %s); %d pods wait for a node",
		c.Nodes, c.Allocatable, c.Requested, strings.Join(loads, ", "), formatRatio(effectiveThreshold(r.Options.MaxLoadDesired)), c.Pending)
}

func effectiveThreshold(t float64) float64 {
	if t > 0 {
		return t
	}
	return planner.DefaultMaxLoadDesired
}

// formatRatio renders a load or fulfillment with up to three decimals.
func formatRatio(f float64) string {
	return snapshot.FormatMilli(int64(math.Round(f * 1000)))
}

// printData writes v as JSON or YAML when format names one, and reports
// whether it did (or failed to); for the text formats it writes nothing,
// and for a format it does not know it fails naming it.
func printData(w io.Writer, v any, format string) (bool, error) {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(data)
		return true, err
	case "", "table", "wide":
		return false, nil
	default:
		return true, fmt.Errorf("unknown output format %q", format)
	}
}
