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
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/config"
)

// Formats are the outputs Print writes: a block per job ("table", or ""),
// the same with the whole configuration ("wide"), or the Result as JSON or
// YAML.
var Formats = []string{"table", "wide", "json", "yaml"}

// Print writes res in format; namespace is the one the jobs were filtered
// by ("" for all), for the sentence of an empty report.
func Print(w io.Writer, res Result, format, namespace string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case "yaml":
		data, err := yaml.Marshal(res)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "", "table", "wide":
	default:
		return fmt.Errorf("unknown output format %q", format)
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
	if j.Phase == "Running" && j.Limit != autoscaler.LimitNotElastic {
		fmt.Fprintf(b, "  fulfillment  %s (%d placed after the next cycle)\n", formatRatio(j.Fulfillment), j.Placed)
	}
	next := "nothing"
	if j.Next != nil {
		next = fmt.Sprintf("%d -> %d (%s): %s", j.Next.From, j.Next.To, j.Next.Cause, j.Next.Reason)
	}
	fmt.Fprintf(b, "  next cycle   %s\n", next)
	limit := string(j.Limit)
	if j.Limit == autoscaler.LimitCoolDown && interval > 0 {
		cycles := int(math.Ceil(float64(j.CoolDownLeft) / float64(interval)))
		limit += fmt.Sprintf(" (%d cycles, %v left)", cycles, j.CoolDownLeft.Round(time.Second))
	}
	fmt.Fprintf(b, "  limited by   %s: %s\n\n", limit, j.Message)
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
	return autoscaler.DefaultMaxLoadDesired
}

// formatRatio renders a load or fulfillment with up to three decimals.
func formatRatio(f float64) string {
	return cluster.FormatMilli(int64(math.Round(f * 1000)))
}
