package scale

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PhaseCost is edl's CPU and memory over one phase.
type PhaseCost struct {
	Phase
	// CPUPerMinute is CPU seconds per minute of wall time.
	CPUPerMinute float64
	// MeanRSS and PeakRSS are in bytes.
	MeanRSS, PeakRSS int64
}

// Costs computes each phase's cost from the samples inside it; a phase
// with fewer than two samples costs NaN CPU.
func Costs(samples []Sample, phases []Phase) []PhaseCost {
	out := make([]PhaseCost, 0, len(phases))
	for _, p := range phases {
		c := PhaseCost{Phase: p, CPUPerMinute: math.NaN()}
		var first, last *Sample
		var sum int64
		n := 0
		for i := range samples {
			s := &samples[i]
			if s.At < p.Start || s.At > p.End {
				continue
			}
			if first == nil {
				first = s
			}
			last = s
			sum += s.RSS
			n++
			c.PeakRSS = max(c.PeakRSS, s.RSS)
		}
		if n > 0 {
			c.MeanRSS = sum / int64(n)
		}
		if n >= 2 && last.At > first.At {
			c.CPUPerMinute = (last.CPU - first.CPU) / (last.At - first.At).Minutes()
		}
		out = append(out, c)
	}
	return out
}

// PeakRSS is the highest resident memory of the samples.
func PeakRSS(samples []Sample) int64 {
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.RSS)
	}
	return peak
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ms(seconds float64) string {
	if math.IsNaN(seconds) {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", seconds*1000)
}

// Markdown writes the run's tables; command is how to reproduce them.
func Markdown(r *Result, command string) string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "Reproduce: `%s`\n\n", command)
	fmt.Fprintf(&b, "%d kwok nodes of %d CPU / %s; %d TrainingJobs in %d namespaces, each %d–%d trainers of %s CPU and 1 pserver of %s; "+
		"a web Deployment at a higher priority of %d pods of %s CPU (a third of the cluster's CPU); edl -autoscale_interval %s%s. "+
		"At most %d pods at once. Control plane with nodes up in %s; the whole run took %s. Load average (1, 5, 15 min) %s before, %s after, on %d cores.\n\n",
		c.Nodes, c.NodeCPU, c.NodeMemory, c.Jobs, c.Namespaces, TrainerMin, c.TrainerMax(), TrainerSize.CPU, PserverSize.CPU,
		c.WebReplicas(), WebSize.CPU, c.Interval, edlFlagsText(c.EDLFlags), r.Pods, r.Setup.Round(time.Second), r.Wall.Round(time.Second), r.LoadBefore, r.LoadAfter, numCPU())

	b.WriteString("### edl's memory and CPU (from /proc)\n\n")
	b.WriteString("| phase | length | CPU s / min | mean RSS | peak RSS |\n|---|---:|---:|---:|---:|\n")
	for _, p := range Costs(r.Samples, r.Phases) {
		cpu := "–"
		if !math.IsNaN(p.CPUPerMinute) {
			cpu = fmt.Sprintf("%.2f", p.CPUPerMinute)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", p.Name, (p.End - p.Start).Round(time.Second), cpu, mib(p.MeanRSS), mib(p.PeakRSS))
	}
	fmt.Fprintf(&b, "\nPeak resident memory over the run: %s.\n\n", mib(PeakRSS(r.Samples)))

	steady := Phase{}
	for _, p := range r.Phases {
		if strings.HasPrefix(p.Name, "steady") {
			steady = p
		}
	}
	fmt.Fprintf(&b, "### edl's requests over the steady window of %s (from the audit log)\n\n", (steady.End - steady.Start).Round(time.Second))
	lists, writes := listsAndWrites(r.Steady)
	b.WriteString("| verb | resource | client | requests |\n|---|---|---|---:|\n")
	for _, rc := range r.Steady {
		client := "controller"
		if rc.LeaderElection {
			client = "leader election"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", rc.Verb, rc.Resource, client, rc.N)
	}
	if len(r.Steady) == 0 {
		b.WriteString("| – | – | – | 0 |\n")
	}
	fmt.Fprintf(&b, "\nLIST requests: %d; writes by the controller: %d (goal: 0 and 0).\n\n", lists, writes)

	b.WriteString("### edl's requests over the whole run (from the audit log)\n\n")
	b.WriteString("| verb | resource | client | requests |\n|---|---|---|---:|\n")
	for _, rc := range r.Requests {
		client := "controller"
		if rc.LeaderElection {
			client = "leader election"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", rc.Verb, rc.Resource, client, rc.N)
	}
	fs := r.FillStatus
	fmt.Fprintf(&b, "\nWhile the jobs started (filling the cluster): %d updates and %d patches of trainingjobs/status, "+
		"%.1f per job per minute on average; the busiest job's busiest minute: %d.\n\n", fs.Updates, fs.Patches, fs.PerJobMinute, fs.Peak)

	b.WriteString("### The wave: from a step until every job runs its plan's target\n\n")
	b.WriteString("| step | running trainers | until edl's last scaling | until all run | settled |\n|---|---|---:|---:|---|\n")
	for _, s := range r.Settles {
		settled := "yes"
		if !s.Settled {
			settled = "no: " + s.Why
		}
		fmt.Fprintf(&b, "| %s | %d → %d | %s (floor %s) | %s | %s |\n", s.Name, s.TrainersBefore, s.TrainersAfter,
			s.EDL.Round(time.Second), s.Figures.FloorString(), s.Total.Round(time.Second), settled)
	}
	b.WriteString("\n")
	b.WriteString(FiguresMarkdown(r.Settles))
	b.WriteString(CoresMarkdown(r.Settles, numCPU(), Components))
	for _, s := range r.Settles {
		if len(s.Timeline) == 0 {
			continue
		}
		fmt.Fprintf(&b, "After the step \"%s\" (seconds since the step; edl's log is to the second):\n\n", s.Name)
		b.WriteString("| what | count | first | last |\n|---|---:|---:|---:|\n")
		for _, sp := range s.Timeline {
			if sp.N == 0 {
				fmt.Fprintf(&b, "| %s | 0 | – | – |\n", sp.What)
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f |\n", sp.What, sp.N, sp.First.Seconds(), sp.Last.Seconds())
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "### One cycle (snapshot + plan, `%s`) over the run\n\n", CycleMetric)
	fmt.Fprintf(&b, "| cycles | p50 | p99 | mean |\n|---:|---:|---:|---:|\n| %d | %s | %s | %s |\n\n",
		r.Cycle.Count, ms(r.Cycle.Quantile(0.5)), ms(r.Cycle.Quantile(0.99)), ms(r.Cycle.Mean()))
	return b.String()
}

// listsAndWrites counts the controller's LISTs and writes among counts
// (the leader election's lease renewals left out).
func listsAndWrites(counts []RequestCount) (lists, writes int) {
	for _, rc := range counts {
		switch {
		case rc.LeaderElection:
		case rc.Verb == "list":
			lists += rc.N
		case writeVerb(rc.Verb):
			writes += rc.N
		}
	}
	return lists, writes
}

func writeVerb(v string) bool {
	switch v {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

var kindColors = map[string]color.Color{
	KindGet:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	KindList:  color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	KindWatch: color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
	KindWrite: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// Plot draws memory-over-time and requests-over-time PNGs into dir and
// returns their paths.
func Plot(dir string, r *Result) (memory, requests string, err error) {
	mem := plot.New()
	mem.Title.Text = "edl's resident memory and the cluster's pods"
	mem.X.Label.Text = "minutes since edl started"
	mem.Y.Label.Text = "RSS (MiB) / pods ÷ 100"
	rss, pods := make(plotter.XYs, 0, len(r.Samples)), make(plotter.XYs, 0, len(r.Samples))
	for _, s := range r.Samples {
		rss = append(rss, plotter.XY{X: s.At.Minutes(), Y: float64(s.RSS) / (1 << 20)})
		pods = append(pods, plotter.XY{X: s.At.Minutes(), Y: float64(s.Pods) / 100})
	}
	if err := addLine(mem, "RSS (MiB)", rss, kindColors[KindGet], nil); err != nil {
		return "", "", err
	}
	if err := addLine(mem, "pods ÷ 100", pods, kindColors[KindWatch], []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
		return "", "", err
	}
	mem.Y.Min = 0
	memory = filepath.Join(dir, "memory.png")
	if err := mem.Save(8*vg.Inch, 4*vg.Inch, memory); err != nil {
		return "", "", err
	}

	req := plot.New()
	req.Title.Text = "edl's requests per 10 s, by kind (leader election left out)"
	req.X.Label.Text = "minutes since edl started"
	req.Y.Label.Text = "requests"
	for _, kind := range Kinds {
		xy := make(plotter.XYs, 0, len(r.Buckets))
		for _, bk := range r.Buckets {
			xy = append(xy, plotter.XY{X: bk.At.Minutes(), Y: float64(bk.ByKind[kind])})
		}
		if err := addLine(req, kind, xy, kindColors[kind], nil); err != nil {
			return "", "", err
		}
	}
	req.Y.Min = 0
	requests = filepath.Join(dir, "requests.png")
	if err := req.Save(8*vg.Inch, 4*vg.Inch, requests); err != nil {
		return "", "", err
	}
	return memory, requests, nil
}

func addLine(p *plot.Plot, name string, xy plotter.XYs, c color.Color, dashes []vg.Length) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color, l.Dashes, l.Width = c, dashes, vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	p.Legend.Top = true
	return nil
}

// edlFlagsText names the flags a run gave edl beyond every run's, after
// its interval.
func edlFlagsText(flags []string) string {
	if len(flags) == 0 {
		return ""
	}
	return " " + strings.Join(flags, " ")
}
