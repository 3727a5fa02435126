package experiment

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

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

// PlotScenario draws the figure of one scenario, EDL on and off, into
// dir/<scenario>.png and returns its path. on or off may be nil.
func PlotScenario(dir string, scenario Scenario, on, off *Result) (string, error) {
	util := func(s Sample) float64 { return 100 * s.Utilization }
	ideal := func(s Sample) float64 { return 100 * s.Ideal }
	utilPanel := panel{title: "CPU allocation utilization (Σ requests of Running pods ÷ Σ allocatable)", ylabel: "%", ymax: 105, legend: true}
	utilPanel.lines = []series{
		{name: "EDL on", xy: xys(on, util), color: colorOn},
		{name: "EDL off", xy: xys(off, util), color: colorOff},
		{name: "ideal bound, EDL on", xy: xys(on, ideal), color: colorOn, dashes: dotted},
		{name: "ideal bound, EDL off", xy: xys(off, ideal), color: colorOff, dashes: dotted},
	}
	if scenario == Training {
		// The demand, and so the bound, is the same in both modes.
		utilPanel.lines = append(utilPanel.lines[:2], series{name: "ideal bound", xy: xys(on, ideal), color: colorIdeal, dashes: dotted})
	}

	var panels []panel
	switch scenario {
	case Training:
		pending := func(s Sample) float64 { return float64(s.PendingJobs) }
		panels = append(panels, panel{title: "Jobs pending (submitted, not yet Running)", ylabel: "jobs", legend: true, lines: []series{
			{name: "EDL on", xy: xys(on, pending), color: colorOn},
			{name: "EDL off", xy: xys(off, pending), color: colorOff},
			{name: "jobs submitted", xy: xys(on, func(s Sample) float64 { return float64(s.Submitted) }), color: colorIdeal, dashes: dotted},
		}})
		panels = append(panels, utilPanel)
		panels = append(panels, jobPanel("Trainers Running per job, EDL on (one line per job)", on))
		panels = append(panels, jobPanel("Trainers Running per job, EDL off (one line per job)", off))
	case Shared:
		web := func(s Sample) float64 { return float64(s.WebDesired) }
		webPending := func(s Sample) float64 { return float64(s.WebPending) }
		panels = append(panels, panel{title: "Web (nginx) pods, priority above the jobs", ylabel: "pods", legend: true, lines: []series{
			{name: "replicas wanted", xy: xys(on, web), color: colorWeb},
			{name: "pending, EDL on", xy: xys(on, webPending), color: colorOn},
			{name: "pending, EDL off", xy: xys(off, webPending), color: colorOff, dashes: dashed},
		}})
		trainers := func(s Sample) float64 { return float64(s.RunningTrainers) }
		panels = append(panels, panel{title: "Trainers Running, all jobs", ylabel: "trainers", legend: true, lines: []series{
			{name: "EDL on", xy: xys(on, trainers), color: colorOn},
			{name: "EDL off", xy: xys(off, trainers), color: colorOff},
		}})
		panels = append(panels, utilPanel)
		panels = append(panels, jobPanel("Trainers Running per job, EDL on (one line per job)", on))
	}
	path := filepath.Join(dir, string(scenario)+".png")
	return path, drawFigure(path, panels)
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
