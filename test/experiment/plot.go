package experiment

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	colorOn    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	colorOff   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
	colorIdeal = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff} // grey
	colorWeb   = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff} // green
	dashed     = []vg.Length{vg.Points(5), vg.Points(3)}
	dotted     = []vg.Length{vg.Points(1.5), vg.Points(2)}
)

// series is one line of a panel.
type series struct {
	name   string
	xy     plotter.XYs
	color  color.Color
	dashes []vg.Length
}

// panel is one plot of a figure.
type panel struct {
	title, ylabel string
	lines         []series
	ymax          float64 // 0: automatic
	legend        bool
}

func xys(r *Result, y func(Sample) float64) plotter.XYs {
	if r == nil {
		return nil
	}
	out := make(plotter.XYs, 0, len(r.Samples))
	for _, s := range r.Samples {
		out = append(out, plotter.XY{X: s.At.Seconds(), Y: y(s)})
	}
	return out
}

// runColors color the runs of a figure in order: EDL on, EDL off, then the
// variants.
var runColors = []color.Color{
	colorOn, colorOff,
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
}

// PlotScenario draws the figure of one scenario, one line per run, into
// dir/<scenario>.png and returns its path.
func PlotScenario(dir string, scenario Scenario, runs []*Result) (string, error) {
	util := func(s Sample) float64 { return 100 * s.Utilization }
	ideal := func(s Sample) float64 { return 100 * s.Ideal }
	each := func(y func(Sample) float64, dashes []vg.Length) []series {
		var out []series
		for i, r := range runs {
			out = append(out, series{name: r.Variant.Label(), xy: xys(r, y), color: runColors[i%len(runColors)], dashes: dashes})
		}
		return out
	}
	first := func(m Mode) *Result {
		for _, r := range runs {
			if r.Variant.Mode == m {
				return r
			}
		}
		return nil
	}
	on, off := first(On), first(Off)

	utilPanel := panel{title: "CPU allocation utilization (Σ requests of Running pods ÷ Σ allocatable)", ylabel: "%", ymax: 105, legend: true,
		lines: each(util, nil)}
	switch scenario {
	case Training:
		// Every job wants its maximum in both modes: one demand, one bound.
		r := on
		if r == nil {
			r = off
		}
		utilPanel.lines = append(utilPanel.lines, series{name: "ideal bound", xy: xys(r, ideal), color: colorIdeal, dashes: dotted},
			series{name: "bound of the trainers, the rest where it runs, EDL on", xy: xys(on, func(s Sample) float64 { return 100 * s.IdealTrainers }),
				color: colorIdeal, dashes: dashed})
	case Teams:
		// The demand is the same in every variant: one bound.
		if len(runs) > 0 {
			utilPanel.lines = append(utilPanel.lines, series{name: "ideal bound", xy: xys(runs[0], ideal), color: colorIdeal, dashes: dotted})
		}
	case Shared:
		utilPanel.lines = append(utilPanel.lines,
			series{name: "ideal bound, EDL on", xy: xys(on, ideal), color: colorOn, dashes: dotted},
			series{name: "ideal bound, EDL off", xy: xys(off, ideal), color: colorOff, dashes: dotted},
			series{name: "bound with the web pods where they run, EDL on", xy: xys(on, func(s Sample) float64 { return 100 * s.IdealAround }),
				color: colorOn, dashes: dashed},
			series{name: "bound of the trainers, the rest where it runs, EDL on", xy: xys(on, func(s Sample) float64 { return 100 * s.IdealTrainers }),
				color: colorIdeal, dashes: dashed})
	}
	var poolPanels []panel
	if scenario == Pools && len(runs) > 0 {
		for _, name := range poolNames(runs[0]) {
			pool := func(y func(PoolSample) float64) func(Sample) float64 {
				return func(s Sample) float64 {
					for _, p := range s.Pools {
						if p.Name == name {
							return 100 * y(p)
						}
					}
					return 0
				}
			}
			res := poolResource(runs[0], name)
			lines := each(pool(PoolSample.Utilization), nil)
			lines = append(lines,
				series{name: "ideal bound, EDL on", xy: xys(on, pool(func(p PoolSample) float64 { return p.Ideal })), color: colorOn, dashes: dotted},
				series{name: "ideal bound, EDL off", xy: xys(off, pool(func(p PoolSample) float64 { return p.Ideal })), color: colorOff, dashes: dotted})
			if res == CPU {
				lines = append(lines, series{name: "bound with the web pods where they run, EDL on",
					xy: xys(on, pool(func(p PoolSample) float64 { return p.IdealAround })), color: colorOn, dashes: dashed},
					series{name: "bound of the trainers, the rest where it runs, EDL on",
						xy: xys(on, pool(func(p PoolSample) float64 { return p.IdealTrainers })), color: colorIdeal, dashes: dashed})
			}
			poolPanels = append(poolPanels, panel{title: fmt.Sprintf("%s pool: %s allocation utilization (Σ requests of its Running pods ÷ Σ its allocatable)",
				name, strings.ToUpper(string(res))), ylabel: "%", ymax: 105, legend: true, lines: lines})
		}
	}

	var panels []panel
	switch scenario {
	case Training:
		pending := each(func(s Sample) float64 { return float64(s.PendingJobs) }, nil)
		if len(runs) > 0 {
			pending = append(pending, series{name: "jobs submitted", xy: xys(runs[0], func(s Sample) float64 { return float64(s.Submitted) }),
				color: colorIdeal, dashes: dotted})
		}
		panels = append(panels, panel{title: "Jobs pending (submitted, not yet Running)", ylabel: "jobs", legend: true, lines: pending})
		panels = append(panels, utilPanel)
		for _, r := range runs {
			panels = append(panels, jobPanel("Trainers Running per job, "+r.Variant.Label()+" (one line per job)", r))
		}
	case Teams:
		panels = append(panels, utilPanel)
		for _, r := range runs {
			panels = append(panels, teamPanel(r))
		}
	case Shared, Pools:
		web := []series{}
		if len(runs) > 0 {
			web = append(web, series{name: "web replicas wanted", xy: xys(runs[0], func(s Sample) float64 { return float64(s.WebDesired) }), color: colorWeb})
		}
		for i, r := range runs {
			web = append(web, series{name: "pending, " + r.Variant.Label(), color: runColors[i%len(runColors)], dashes: dashed,
				xy: xys(r, func(s Sample) float64 { return float64(s.WebPending) })})
		}
		panels = append(panels, panel{title: "Web (nginx) pods, priority above the jobs", ylabel: "pods", legend: true, lines: web})
		panels = append(panels, panel{title: "Trainers Running, all jobs", ylabel: "trainers", legend: true,
			lines: each(func(s Sample) float64 { return float64(s.RunningTrainers) }, nil)})
		if scenario == Pools {
			panels = append(panels, poolPanels...)
		} else {
			panels = append(panels, utilPanel)
		}
		for _, r := range runs {
			if r.Variant.Mode == On {
				panels = append(panels, jobPanel("Trainers Running per job, "+r.Variant.Label()+" (one line per job)", r))
			}
		}
	}
	path := filepath.Join(dir, string(scenario)+".png")
	return path, drawFigure(path, panels)
}

// teamColors color the teams of Teams in TeamSpecs' order.
var teamColors = []color.Color{
	colorOn,
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	colorWeb,
}

// teamPanel draws each team's share of the allocatable CPU (solid), its
// weighted fair share (dashed) and, with TrainingQueues, the share EDL
// deserved it (dotted) in one run.
func teamPanel(r *Result) panel {
	title := "Teams' share of the CPU (solid) and weighted fair share of the CPU they hold (dashed), " + r.Variant.Label()
	queues := false
	for _, s := range r.Samples {
		for _, t := range s.Teams {
			queues = queues || t.DeservedMilli > 0
		}
	}
	if queues {
		title += "; EDL's deserved share (dotted)"
	}
	p := panel{title: title, ylabel: "% of the CPU", ymax: 105, legend: true}
	for i, name := range teamNames(r) {
		share := func(f func(TeamSample) float64) func(Sample) float64 {
			return func(s Sample) float64 {
				for _, t := range s.Teams {
					if t.Name == name && s.CPUAllocMilli > 0 {
						return 100 * f(t) / float64(s.CPUAllocMilli)
					}
				}
				return 0
			}
		}
		c := teamColors[i%len(teamColors)]
		p.lines = append(p.lines,
			series{name: "team " + name, xy: xys(r, share(func(t TeamSample) float64 { return float64(t.CPURunningMilli) })), color: c},
			series{name: "team " + name + ", fair share", xy: xys(r, share(func(t TeamSample) float64 { return t.FairMilli })), color: c, dashes: dashed})
		if queues {
			p.lines = append(p.lines, series{name: "team " + name + ", EDL's deserved", color: c, dashes: dotted,
				xy: xys(r, share(func(t TeamSample) float64 { return float64(t.DeservedMilli) }))})
		}
	}
	return p
}

// poolResource is the resource the named pool's utilization counts.
func poolResource(r *Result, name string) Resource {
	for _, s := range r.Samples {
		for _, p := range s.Pools {
			if p.Name == name {
				return p.Resource()
			}
		}
	}
	return CPU
}

// jobPanel draws one line per job of the trainers it runs.
func jobPanel(title string, r *Result) panel {
	p := panel{title: title, ylabel: "trainers"}
	if r == nil {
		return p
	}
	names := jobNames(r)
	colors := palette.Rainbow(max(len(names), 2), palette.Red, palette.Magenta, 0.8, 0.8, 1).Colors()
	for i, name := range names {
		p.lines = append(p.lines, series{name: name, color: colors[i], xy: xys(r, func(s Sample) float64 {
			for _, j := range s.Jobs {
				if j.Name == name {
					return float64(j.Running)
				}
			}
			return 0
		})})
	}
	return p
}

// secondTicks marks whole seconds at a round step giving at most ten labels.
func secondTicks(lo, hi float64) []plot.Tick {
	step := 5.0
	for _, s := range []float64{5, 10, 20, 30, 60, 120, 300, 600} {
		step = s
		if (hi-lo)/s <= 10 {
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ticks
}

// drawFigure stacks the panels vertically into one PNG.
func drawFigure(path string, panels []panel) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	rows := make([][]*plot.Plot, 0, len(panels))
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "time (s)"
		p.X.Tick.Marker = plot.TickerFunc(secondTicks)
		p.Y.Label.Text = pn.ylabel
		p.Y.Min = 0
		if pn.ymax > 0 {
			p.Y.Max = pn.ymax
		}
		p.Add(plotter.NewGrid())
		for _, s := range pn.lines {
			if len(s.xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(s.xy)
			if err != nil {
				return fmt.Errorf("plot %s: %w", s.name, err)
			}
			l.Color = s.color
			l.Width = vg.Points(1.5)
			l.Dashes = s.dashes
			p.Add(l)
			if pn.legend {
				p.Legend.Add(s.name, l)
			}
		}
		p.Legend.Top = true
		p.Legend.Left = true
		rows = append(rows, []*plot.Plot{p})
	}
	const width, rowHeight = 10 * vg.Inch, 3.2 * vg.Inch
	img := vgimg.New(width, rowHeight*vg.Length(len(panels)))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
