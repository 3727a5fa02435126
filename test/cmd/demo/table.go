package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddlepaddle/edl/test/experiment"
)

// realMark follows the name of a job whose pods run as processes on the
// real node.
const realMark = " (real pods)"

// printTable prints the jobs and the cluster at one sample; the jobs named
// in real run on the real node.
func printTable(w io.Writer, s experiment.Sample, what string, real map[string]bool) {
	fmt.Fprintf(w, "\nt=%3.0fs %-13s CPU utilization %5.1f%%   web pods (priority %d): %d/%d running, %d pending\n",
		s.At.Seconds(), "["+what+"]", 100*s.Utilization, experiment.WebPriorityValue, s.WebRunning, s.WebDesired, s.WebPending)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  JOB\tPHASE\tTRAINERS cur/min/max\tWANTED\tFULFILLMENT\t")
	for _, j := range s.Jobs {
		phase, fulfillment := string(j.Phase), "-"
		if phase == "" {
			phase = "(new)"
		}
		if j.Running >= j.Min {
			fulfillment = fmt.Sprintf("%.2f", j.Fulfillment)
		}
		name := j.Name
		if real[name] {
			name += realMark
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d/%d\t%d\t%s\t%s\n", name, phase, j.Running, j.Min, j.Max, j.Desired, fulfillment, bar(j.Running, j.Max))
	}
	tw.Flush()
}

// bar draws the running trainers out of max.
func bar(n, maxN int) string {
	n = min(max(n, 0), maxN)
	return strings.Repeat("█", n) + strings.Repeat("·", maxN-n)
}

// result is what the demo showed, computed from its samples.
type result struct {
	over time.Duration
	// meanUtilization is the mean CPU allocation utilization over the samples.
	meanUtilization float64
	// mostWebPending is the most web pods pending at once; longestWebWait the
	// longest a web pod waited for a node.
	mostWebPending int
	longestWebWait time.Duration
	jobs           []jobResult
}

// jobResult is one job's part of the result.
type jobResult struct {
	name     string
	min      int
	started  bool
	startIn  time.Duration
	lo, hi   int // running trainers seen
	last     int // running trainers at the end
	lastWant int // the ReplicaSet's replicas at the end
}

// summarize computes the result from the samples and the recorder's timings.
func summarize(samples []experiment.Sample, timings []experiment.JobTiming, waits []experiment.PodWait) result {
	var r result
	if len(samples) == 0 {
		return r
	}
	r.over = samples[len(samples)-1].At
	index := map[string]int{}
	var util float64
	for _, s := range samples {
		util += s.Utilization
		r.mostWebPending = max(r.mostWebPending, s.WebPending)
		for _, j := range s.Jobs {
			i, ok := index[j.Name]
			if !ok {
				i = len(r.jobs)
				index[j.Name] = i
				r.jobs = append(r.jobs, jobResult{name: j.Name, lo: j.Running, hi: j.Running})
			}
			jr := &r.jobs[i]
			jr.min = j.Min
			jr.lo, jr.hi, jr.last, jr.lastWant = min(jr.lo, j.Running), max(jr.hi, j.Running), j.Running, j.Desired
		}
	}
	r.meanUtilization = util / float64(len(samples))
	for _, w := range waits {
		if w.Running >= 0 {
			r.longestWebWait = max(r.longestWebWait, w.Running-w.Created)
		}
	}
	for _, t := range timings {
		if i, ok := index[t.Name]; ok && t.Running >= 0 {
			r.jobs[i].started, r.jobs[i].startIn = true, t.Running-t.Submitted
		}
	}
	return r
}

// summary prints the result.
func summary(w io.Writer, r result) {
	if len(r.jobs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n==> summary over %s\n", r.over.Round(time.Second))
	fmt.Fprintf(w, "  mean CPU allocation utilization %.1f%%; web pods pending at most %d at once, the longest waited %.1f s for a node\n",
		100*r.meanUtilization, r.mostWebPending, r.longestWebWait.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  JOB\tRUNNING AFTER\tTRAINERS min..max seen\tNOW\t")
	for _, j := range r.jobs {
		after := "never"
		if j.started {
			after = fmt.Sprintf("%.1f s", j.startIn.Seconds())
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d..%d\t%d\t\n", j.name, after, j.lo, j.hi, j.last)
	}
	tw.Flush()
}

// Bounds of the demo's asserted mode (-check). The demo's cluster holds every
// job above its minimum beside the whole web wave, so these are loose: they
// fail when EDL does not grow, does not yield, or does not grow back, not when
// the machine is slow.
const (
	checkMinUtilization = 0.60
	checkMaxWebWait     = 20 * time.Second
)

// check says what in the result is outside the bounds of a working EDL:
// every job started and grew above its minimum, the cluster was used, web
// pods found room, and after the wave every job is back above its minimum.
func check(r result, jobs int) error {
	var errs []error
	if len(r.jobs) != jobs {
		errs = append(errs, fmt.Errorf("%d jobs seen, want %d", len(r.jobs), jobs))
	}
	if r.meanUtilization < checkMinUtilization {
		errs = append(errs, fmt.Errorf("mean CPU allocation utilization %.1f%% < %.0f%%", 100*r.meanUtilization, 100*checkMinUtilization))
	}
	if r.longestWebWait > checkMaxWebWait {
		errs = append(errs, fmt.Errorf("a web pod waited %.1f s for a node (> %s)", r.longestWebWait.Seconds(), checkMaxWebWait))
	}
	for _, j := range r.jobs {
		switch {
		case !j.started:
			errs = append(errs, fmt.Errorf("job %s never reached Running", j.name))
		case j.hi <= j.min:
			errs = append(errs, fmt.Errorf("job %s never grew above its minimum %d (trainers %d..%d)", j.name, j.min, j.lo, j.hi))
		case j.lastWant <= j.min:
			errs = append(errs, fmt.Errorf("job %s did not grow back after the wave: %d trainers wanted, minimum %d", j.name, j.lastWant, j.min))
		}
	}
	return errors.Join(errs...)
}
