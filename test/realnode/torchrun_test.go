package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The record of a proof run, for docs/experiments-torch.md: train.log as
// rank 0 wrote it, resizes.csv (every change of the trainer ReplicaSet, and
// the burst's start and end), and run.png (the trainers training and the
// loss over time).

var epochLine = regexp.MustCompile(`(?m)^epoch=(\d+) loss=([0-9.]+) world_size=(\d+) .* time=([0-9.]+)$`)

// writeTorchRun writes the run's record into dir.
func writeTorchRun(dir, trainLog string, history []resize, burst, gone time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "train.log"), []byte(trainLog), 0o644); err != nil { // #nosec G306 -- a record for the docs
		return err
	}
	first := trainingLine.FindStringSubmatch(trainLog)
	if first == nil {
		return fmt.Errorf("no training line in train.log")
	}
	t0 := unixTime(first[2])
	var csv strings.Builder
	csv.WriteString("t_s,event,from,to\n")
	for _, r := range history {
		fmt.Fprintf(&csv, "%.3f,resize,%d,%d\n", r.at.Sub(t0).Seconds(), r.from, r.to)
	}
	fmt.Fprintf(&csv, "%.3f,burst,,\n%.3f,burst_gone,,\n", burst.Sub(t0).Seconds(), gone.Sub(t0).Seconds())
	if err := os.WriteFile(filepath.Join(dir, "resizes.csv"), []byte(csv.String()), 0o644); err != nil { // #nosec G306 -- a record for the docs
		return err
	}
	return plotTorchRun(filepath.Join(dir, "run.png"), trainLog, t0)
}

// plotTorchRun draws the world size training (a step line, 0 while no world
// trains) above the loss at each epoch's end, over seconds since the start.
func plotTorchRun(path, trainLog string, t0 time.Time) error {
	var world, loss plotter.XYs
	cur := 0.0
	for _, line := range strings.Split(trainLog, "\n") {
		if m := trainingLine.FindStringSubmatch(line); m != nil {
			x := unixTime(m[2]).Sub(t0).Seconds()
			w, _ := strconv.ParseFloat(m[1], 64)
			world = append(world, plotter.XY{X: x, Y: cur}, plotter.XY{X: x, Y: w})
			cur = w
		}
		if strings.HasPrefix(line, "stopped ") {
			if i := strings.LastIndex(line, "time="); i >= 0 {
				x := unixTime(line[i+5:]).Sub(t0).Seconds()
				world = append(world, plotter.XY{X: x, Y: cur}, plotter.XY{X: x, Y: 0})
				cur = 0
			}
		}
		if m := epochLine.FindStringSubmatch(line); m != nil {
			l, _ := strconv.ParseFloat(m[2], 64)
			loss = append(loss, plotter.XY{X: unixTime(m[4]).Sub(t0).Seconds(), Y: l})
		}
	}
	if len(loss) > 0 {
		world = append(world, plotter.XY{X: loss[len(loss)-1].X, Y: cur})
	}
	top := plot.New()
	top.Title.Text = "example/torchjob.yaml on the real node: trainers training"
	top.Y.Label.Text = "world size"
	top.Y.Min, top.Y.Max = 0, 3.5
	wl, err := plotter.NewLine(world)
	if err != nil {
		return err
	}
	top.Add(wl, plotter.NewGrid())
	bottom := plot.New()
	bottom.X.Label.Text = "seconds since the first world trained"
	bottom.Y.Label.Text = "loss (epoch mean)"
	ll, err := plotter.NewLine(loss)
	if err != nil {
		return err
	}
	bottom.Add(ll, plotter.NewGrid())
	bottom.X.Min, bottom.X.Max = top.X.Min, top.X.Max
	img := vgimg.New(8*vg.Inch, 6*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	f, err := os.Create(path) // #nosec G304 -- the record's own path
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
