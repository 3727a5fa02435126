package scale

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Summary is one run's headline figures, kept per size (SaveSummary) so that
// runs of different sizes make one table and plots against size.
type Summary struct {
	Nodes, NodeCPU, Jobs, Namespaces int
	// Pods is the most pods the cluster held at once.
	Pods int
	// PeakRSS is over the run, SteadyRSS the mean of the steady window (MiB).
	PeakRSS, SteadyRSS float64
	// CycleP50 and CycleP99 are one cycle's snapshot and plan (ms).
	CycleP50, CycleP99 float64
	Cycles             uint64
	// SteadyLists and SteadyWrites are edl's LISTs and writes while
	// nothing changed (leader election left out).
	SteadyLists, SteadyWrites int
	// MeanRequests is edl's requests per second while the cluster moved
	// (the fill and the wave), PeakRequests the busiest 10 s, per second;
	// leader election left out.
	MeanRequests, PeakRequests float64
	// Grow and Shrink are the wave's steps (the web service shrinking, then
	// growing back): until edl's last scaling and until all run, seconds;
	// for a step that did not settle, Total is its settle timeout.
	GrowEDL, GrowTotal, ShrinkEDL, ShrinkTotal float64
	// FillSettled, GrowSettled and ShrinkSettled: the step settled before
	// its timeout.
	FillSettled, GrowSettled, ShrinkSettled bool
	// ShrinkWebP95 is the pending time p95 of the web pods created as the
	// web service grows back, seconds, a lower bound when ShrinkWebUnbound
	// of them were not bound when the step ended; ShrinkPreempted the
	// trainers kube-scheduler preempted in that step. Both are nil in the
	// runs made before they were measured.
	ShrinkWebP95     *float64 `json:",omitempty"`
	ShrinkWebUnbound int      `json:",omitempty"`
	ShrinkPreempted  *int     `json:",omitempty"`
	// StatusPerJobMinute and StatusPeak are the status writes while the
	// jobs started: the mean per job per minute, the busiest job-minute.
	StatusPerJobMinute float64
	StatusPeak         int
	// Interval is edl's -autoscale_interval, seconds.
	Interval float64
	// Wall is the run's length, seconds; Load the load average after it.
	Wall float64
	Load string
}

// Summarize takes a run's headline figures.
func Summarize(r *Result) Summary {
	c := r.Config
	s := Summary{Nodes: c.Nodes, NodeCPU: c.NodeCPU, Jobs: c.Jobs, Namespaces: c.Namespaces, Pods: r.Pods,
		PeakRSS: float64(PeakRSS(r.Samples)) / (1 << 20), Interval: c.Interval.Seconds(),
		CycleP50: r.Cycle.Quantile(0.5) * 1000, CycleP99: r.Cycle.Quantile(0.99) * 1000, Cycles: r.Cycle.Count,
		StatusPerJobMinute: r.FillStatus.PerJobMinute, StatusPeak: r.FillStatus.Peak,
		Wall: r.Wall.Seconds(), Load: r.LoadAfter}
	var busy []Phase
	for _, p := range Costs(r.Samples, r.Phases) {
		switch {
		case strings.HasPrefix(p.Name, "steady"):
			s.SteadyRSS = float64(p.MeanRSS) / (1 << 20)
		case strings.HasPrefix(p.Name, "filling"), strings.HasPrefix(p.Name, "the wave"):
			busy = append(busy, Phase{Name: p.Name, Start: p.Start, End: p.End})
		}
	}
	s.SteadyLists, s.SteadyWrites = listsAndWrites(r.Steady)
	var n int
	var length time.Duration
	for _, bk := range r.Buckets {
		total := 0
		for _, v := range bk.ByKind {
			total += v
		}
		s.PeakRequests = max(s.PeakRequests, float64(total)/BucketWidth.Seconds())
		for _, p := range busy {
			if bk.At >= p.Start && bk.At < p.End {
				n += total
				length += BucketWidth
				break
			}
		}
	}
	if length > 0 {
		s.MeanRequests = float64(n) / length.Seconds()
	}
	for i, st := range r.Settles {
		switch i {
		case 0:
			s.FillSettled = st.Settled
		case 1:
			s.GrowEDL, s.GrowTotal, s.GrowSettled = st.EDL.Seconds(), st.Total.Seconds(), st.Settled
		case 2:
			s.ShrinkEDL, s.ShrinkTotal, s.ShrinkSettled = st.EDL.Seconds(), st.Total.Seconds(), st.Settled
			if f := st.Figures; f.Measured {
				p95, preempted := f.WebPending.P95.Seconds(), f.Preempted
				s.ShrinkWebP95, s.ShrinkWebUnbound, s.ShrinkPreempted = &p95, f.WebPending.Unbound, &preempted
			}
		}
	}
	return s
}

// SaveSummary writes s as dir/nodes-N.json, replacing the run of its size.
func SaveSummary(dir string, s Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("nodes-%d.json", s.Nodes)), append(b, '\n'), 0o644) // #nosec G306 -- figures for the docs
}

// LoadSummaries reads every dir/nodes-*.json, smallest cluster first.
func LoadSummaries(dir string) ([]Summary, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "nodes-*.json"))
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p) // #nosec G304 -- the runs' own files
		if err != nil {
			return nil, err
		}
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Nodes < out[j].Nodes })
	return out, nil
}

// SizesMarkdown is the table of the runs by size.
func SizesMarkdown(runs []Summary) string {
	var b strings.Builder
	b.WriteString("| nodes (CPU each) | pods at most | jobs | edl peak RSS | steady RSS | one cycle p50 / p99 | LIST / writes while quiet | " +
		"requests/s while busy: mean / busiest 10 s | web shrinks: edl's last scaling / all run | web grows back: edl's last scaling / all run | " +
		"web grows back: web pods' pending p95 | web grows back: trainers preempted by kube-scheduler | " +
		"status writes per job-minute while starting: mean / busiest | run |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range runs {
		fill := ""
		if !s.FillSettled {
			fill = " (the fill did not settle)"
		}
		pending, preempted := "—", "—"
		if s.ShrinkWebP95 != nil {
			pending = fmt.Sprintf("%.1f s", *s.ShrinkWebP95)
			if s.ShrinkWebUnbound > 0 {
				pending = fmt.Sprintf("at least %s (%d not bound)", pending, s.ShrinkWebUnbound)
			}
		}
		if s.ShrinkPreempted != nil {
			preempted = fmt.Sprint(*s.ShrinkPreempted)
		}
		fmt.Fprintf(&b, "| %d (%d) | %d | %d | %.1f MiB | %.1f MiB | %.1f / %.1f ms | %d / %d | %.1f / %.1f | %s | %s | %s | %s | %.1f / %d | %s%s |\n",
			s.Nodes, s.NodeCPU, s.Pods, s.Jobs, s.PeakRSS, s.SteadyRSS, s.CycleP50, s.CycleP99, s.SteadyLists, s.SteadyWrites,
			s.MeanRequests, s.PeakRequests, reaction(s.GrowSettled, s.GrowEDL, s.GrowTotal, s.Interval),
			reaction(s.ShrinkSettled, s.ShrinkEDL, s.ShrinkTotal, s.Interval), pending, preempted, s.StatusPerJobMinute, s.StatusPeak,
			time.Duration(s.Wall*float64(time.Second)).Round(time.Minute), fill)
	}
	return b.String()
}

// reaction says a wave step's reaction: until edl's last scaling (in
// intervals too) / until all run, or that it did not settle.
func reaction(settled bool, edl, total, interval float64) string {
	if !settled {
		return fmt.Sprintf("did not settle in %s", seconds(total, 0))
	}
	return seconds(edl, interval) + " / " + seconds(total, 0)
}

// seconds says d seconds, and in intervals when interval is not 0.
func seconds(d, interval float64) string {
	if interval == 0 {
		return fmt.Sprintf("%.0f s", d)
	}
	return fmt.Sprintf("%.0f s (%.1f intervals)", d, d/interval)
}

// PlotSizes draws the runs' figures against the number of nodes, a PNG a
// figure (dir/size-N.png), and returns their paths.
func PlotSizes(dir string, runs []Summary) ([]string, error) {
	if len(runs) == 0 {
		return nil, errors.New("no runs to plot")
	}
	always := func(f func(Summary) float64) func(Summary) (float64, bool) {
		return func(s Summary) (float64, bool) { return f(s), true }
	}
	panels := []struct {
		title, unit string
		lines       map[string]func(Summary) (float64, bool)
	}{
		{"edl's memory", "MiB", map[string]func(Summary) (float64, bool){
			"peak RSS":   always(func(s Summary) float64 { return s.PeakRSS }),
			"steady RSS": always(func(s Summary) float64 { return s.SteadyRSS })}},
		{"one cycle (snapshot + plan)", "ms", map[string]func(Summary) (float64, bool){
			"p99": always(func(s Summary) float64 { return s.CycleP99 }),
			"p50": always(func(s Summary) float64 { return s.CycleP50 })}},
		{"edl's requests while busy", "requests/s", map[string]func(Summary) (float64, bool){
			"busiest 10 s": always(func(s Summary) float64 { return s.PeakRequests }),
			"mean":         always(func(s Summary) float64 { return s.MeanRequests })}},
		{"reaction to a web step, until edl's last scaling (settled steps)", "s", map[string]func(Summary) (float64, bool){
			"web grows back (jobs shrink)": func(s Summary) (float64, bool) { return s.ShrinkEDL, s.ShrinkSettled },
			"web shrinks (jobs grow)":      func(s Summary) (float64, bool) { return s.GrowEDL, s.GrowSettled }}},
	}
	colors := []color.Color{kindColors[KindGet], kindColors[KindWatch]}
	var paths []string
	for i, p := range panels {
		pl := plot.New()
		pl.Title.Text = p.title
		pl.X.Label.Text = "kwok nodes"
		pl.Y.Label.Text = p.unit
		names := make([]string, 0, len(p.lines))
		for name := range p.lines {
			names = append(names, name)
		}
		sort.Strings(names)
		for j, name := range names {
			xy := make(plotter.XYs, 0, len(runs))
			for _, s := range runs {
				if y, ok := p.lines[name](s); ok {
					xy = append(xy, plotter.XY{X: float64(s.Nodes), Y: y})
				}
			}
			if len(xy) == 0 {
				continue
			}
			if err := addLine(pl, name, xy, colors[j%len(colors)], nil); err != nil {
				return nil, err
			}
			pts, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			pts.Color = colors[j%len(colors)]
			pl.Add(pts)
		}
		pl.X.Min, pl.Y.Min = 0, 0
		path := filepath.Join(dir, fmt.Sprintf("size-%d.png", i+1))
		if err := pl.Save(5*vg.Inch, 3.5*vg.Inch, path); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
