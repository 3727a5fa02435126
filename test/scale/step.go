package scale

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddlepaddle/edl/test/framework"
)

// Default client rates of kube-controller-manager and kube-scheduler, when
// their flags do not set --kube-api-qps.
const (
	DefaultControllerManagerQPS = 20
	DefaultSchedulerQPS         = 50
)

// PodTimes are when the watcher first saw a pod and first saw it bound to a
// node (zero while it is not).
type PodTimes struct {
	Created, Bound time.Time
}

// Pending is the pending time of a step's web pods, from their creation to
// their binding.
type Pending struct {
	// N pods were created in the step; Unbound of them were not bound when
	// it ended, and count as pending until then (the figures are then
	// lower bounds).
	N, Unbound    int
	P50, P95, Max time.Duration
}

// StepFigures are what happened to the web service and the jobs in a step.
type StepFigures struct {
	// WebPending is over the web pods created in the step.
	WebPending Pending
	// Preempted are the trainers kube-scheduler preempted; Removed the
	// trainers edl's scalings removed.
	Preempted, Removed int
	// Requests are edl's requests, its leader election's left out.
	Requests int
	// Floor is the least time the step's deletions and bindings take at the
	// control plane's client rates ([Floor]).
	Floor time.Duration
	// Measured is false in the results of runs made before these figures.
	Measured bool
	// Cores is the CPU the machine (Machine) and each component used in
	// the step, in cores on average ([CoresIn]); nil in runs made before it.
	Cores map[string]float64 `json:",omitempty"`
}

// Window is a step's stretch of time, [Start, End).
type Window struct {
	Start, End time.Time
}

func (w Window) holds(t time.Time) bool { return !t.Before(w.Start) && t.Before(w.End) }

// StepWindow is a settle's window: from its step until it settled, and a
// second more for the log's and the watch's delays.
func StepWindow(s Settle) Window {
	return Window{s.Start, s.Start.Add(s.Total + time.Second)}
}

// WebPending is the pending time of the pods created in w; a pod not bound
// by w's end is pending until then.
func WebPending(pods []PodTimes, w Window) Pending {
	var out Pending
	var times []time.Duration
	for _, p := range pods {
		if !w.holds(p.Created) {
			continue
		}
		out.N++
		bound := p.Bound
		if bound.IsZero() || !bound.Before(w.End) {
			out.Unbound++
			bound = w.End
		}
		times = append(times, max(bound.Sub(p.Created), 0))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	out.P50, out.P95 = Percentile(times, 0.5), Percentile(times, 0.95)
	if len(times) > 0 {
		out.Max = times[len(times)-1]
	}
	return out
}

// Percentile is the q-quantile of sorted by the nearest rank: the smallest
// value that at least q of the values do not exceed; 0 when sorted is empty.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// CountIn is how many of times fall in w.
func CountIn(times []time.Time, w Window) int {
	n := 0
	for _, t := range times {
		if w.holds(t) {
			n++
		}
	}
	return n
}

// RequestsIn counts edl's requests received in w, the leader election's
// left out.
func RequestsIn(events []framework.AuditEvent, w Window) int {
	n := 0
	for _, e := range events {
		if !e.LeaderElection() && w.holds(e.Received) {
			n++
		}
	}
	return n
}

// Floor is the least time a step that has the ReplicaSet controller delete
// deleted trainers and create created web pods takes at the control plane's
// client rates: (deleted + created) requests of kube-controller-manager at
// controllerQPS, then created bindings of kube-scheduler at schedulerQPS.
// The clients' bursts are left out.
func Floor(deleted, created int, controllerQPS, schedulerQPS float64) time.Duration {
	if controllerQPS <= 0 || schedulerQPS <= 0 {
		return 0
	}
	s := float64(deleted+created)/controllerQPS + float64(created)/schedulerQPS
	return time.Duration(s * float64(time.Second))
}

// APIQPS is the --kube-api-qps of a component's flags, def when they do not
// set it.
func APIQPS(flags []string, def float64) (float64, error) {
	for _, f := range flags {
		v, ok := strings.CutPrefix(f, "--kube-api-qps=")
		if !ok {
			continue
		}
		qps, err := strconv.ParseFloat(v, 64)
		if err != nil || qps <= 0 {
			return 0, fmt.Errorf("flag %q: want a positive number", f)
		}
		return qps, nil
	}
	return def, nil
}

// seconds1 says d in seconds to a tenth.
func seconds1(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// String says the pending times as "p50 / p95 / max", with "at least" when
// some pods were not bound.
func (p Pending) String() string {
	if p.N == 0 {
		return "–"
	}
	s := seconds1(p.P50) + " / " + seconds1(p.P95) + " / " + seconds1(p.Max)
	if p.Unbound > 0 {
		s = fmt.Sprintf("at least %s (%d not bound)", s, p.Unbound)
	}
	return s
}

// FillFigures sets each settle's figures but Removed (which readTimelines
// sets from edl's log, and which the floor needs): the web pods' pending
// times, the trainers preempted and edl's requests in its window, and the
// floor at the client rates of ControllerManagerFlags and SchedulerFlags.
func FillFigures(settles []Settle, web []PodTimes, preempted []time.Time, requests []framework.AuditEvent) error {
	controllerQPS, err := APIQPS(ControllerManagerFlags, DefaultControllerManagerQPS)
	if err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	schedulerQPS, err := APIQPS(SchedulerFlags, DefaultSchedulerQPS)
	if err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	fillFigures(settles, web, preempted, requests, controllerQPS, schedulerQPS)
	return nil
}

func fillFigures(settles []Settle, web []PodTimes, preempted []time.Time, requests []framework.AuditEvent, controllerQPS, schedulerQPS float64) {
	for i := range settles {
		f := &settles[i].Figures
		w := StepWindow(settles[i])
		f.WebPending = WebPending(web, w)
		f.Preempted = CountIn(preempted, w)
		f.Requests = RequestsIn(requests, w)
		f.Floor = Floor(f.Removed, f.WebPending.N, controllerQPS, schedulerQPS)
		f.Measured = true
	}
}

// Components are the processes whose CPU a run reads, in the order of the
// report's columns: the control plane's and edl.
var Components = []string{framework.APIServer, framework.Etcd, framework.Scheduler, framework.ControllerManager, framework.Kwok, "edl"}

// CoresIn is the CPU the machine and each process used over w, in cores
// on average: the difference between the first reading in w and the last,
// over the time between them. It is nil when w holds fewer than two
// readings; a process missing from either is left out.
func CoresIn(readings []CPUReading, w Window) map[string]float64 {
	var first, last *CPUReading
	for i := range readings {
		r := &readings[i]
		if r.At.Before(w.Start) || r.At.After(w.End) {
			continue
		}
		if first == nil {
			first = r
		}
		last = r
	}
	if first == nil || !last.At.After(first.At) {
		return nil
	}
	span := last.At.Sub(first.At).Seconds()
	cores := map[string]float64{}
	for name, end := range last.CPU {
		if start, ok := first.CPU[name]; ok {
			cores[name] = (end - start) / span
		}
	}
	return cores
}

// FillCores sets each settle's Cores from readings over its window.
func FillCores(settles []Settle, readings []CPUReading) {
	for i := range settles {
		settles[i].Figures.Cores = CoresIn(readings, StepWindow(settles[i]))
	}
}

// CoresMarkdown is the table of the CPU the machine and the components used
// in each step, of the machine's cores; empty when no step has it.
func CoresMarkdown(settles []Settle, cores int, components []string) string {
	var b strings.Builder
	for _, s := range settles {
		c := s.Figures.Cores
		if c == nil {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "The CPU used in each step, from the step until it settled (from /proc; cores on average, of the machine's %d):\n\n", cores)
			b.WriteString("| step | " + Machine + " | " + strings.Join(components, " | ") + " |\n|---|---:|" + strings.Repeat("---:|", len(components)) + "\n")
		}
		fmt.Fprintf(&b, "| %s | %s |", s.Name, coresCell(c, Machine))
		for _, name := range components {
			fmt.Fprintf(&b, " %s |", coresCell(c, name))
		}
		b.WriteString("\n")
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func coresCell(cores map[string]float64, name string) string {
	c, ok := cores[name]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f", c)
}

// FiguresMarkdown is the table of the steps' figures, and what its floor is;
// it is empty when the steps have none.
func FiguresMarkdown(settles []Settle) string {
	measured := false
	for _, s := range settles {
		measured = measured || s.Figures.Measured
	}
	if !measured {
		return ""
	}
	var b strings.Builder
	b.WriteString("What happened to the web service and the jobs in each step, from the step until it settled:\n\n")
	b.WriteString("| step | web pods created | their pending p50 / p95 / max | trainers preempted by kube-scheduler | " +
		"trainers removed by edl | edl's requests | floor |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range settles {
		f := s.Figures
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %d | %s |\n", s.Name, f.WebPending.N, f.WebPending,
			f.Preempted, f.Removed, f.Requests, f.FloorString())
	}
	controllerQPS, err := APIQPS(ControllerManagerFlags, DefaultControllerManagerQPS)
	if err != nil {
		controllerQPS = math.NaN()
	}
	schedulerQPS, err := APIQPS(SchedulerFlags, DefaultSchedulerQPS)
	if err != nil {
		schedulerQPS = math.NaN()
	}
	fmt.Fprintf(&b, "\nThe floor is the least time the step's trainer deletions (those edl removed) and web pod creations take "+
		"at kube-controller-manager's client rate of %g requests/s, plus the web pods' bindings at kube-scheduler's of %g, "+
		"their bursts left out.\n\n", controllerQPS, schedulerQPS)
	return b.String()
}

// FloorString says the floor, "–" when it was not measured.
func (f StepFigures) FloorString() string {
	if !f.Measured {
		return "–"
	}
	return seconds1(f.Floor)
}
