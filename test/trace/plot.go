package trace

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotJCT draws, for each workload of the runs, the distribution of its
// jobs' completion times under each policy — the share of the jobs done
// within a time, on a log scale — into dir/jct-<workload>.png, and
// returns the files' paths in the runs' order of workloads.
func PlotJCT(dir string, runs []*Result) ([]string, error) {
	var workloads []string
	byWorkload := map[string][]*Result{}
	for _, r := range runs {
		if byWorkload[r.Workload] == nil {
			workloads = append(workloads, r.Workload)
		}
		byWorkload[r.Workload] = append(byWorkload[r.Workload], r)
	}
	var paths []string
	for _, w := range workloads {
		path := filepath.Join(dir, "jct-"+w+".png")
		if err := plotCDF(path, w, byWorkload[w]); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// plotCDF draws one workload's figure: a step line per policy.
func plotCDF(path, workload string, runs []*Result) error {
	p := plot.New()
	p.Title.Text = "Job completion time, workload " + workload
	p.X.Label.Text = "JCT (s, log scale)"
	p.Y.Label.Text = "share of jobs done"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for i, r := range runs {
		line, err := plotter.NewLine(cdf(r))
		if err != nil {
			return fmt.Errorf("plot %s, policy %s: %w", workload, r.Policy, err)
		}
		line.StepStyle = plotter.PostStep
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(r.Policy, line)
	}
	if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// cdf is the empirical distribution of a run's JCTs: for each JCT in
// order, the share of the jobs done by then. A JCT is at least a second,
// for the log scale.
func cdf(r *Result) plotter.XYs {
	jcts := make([]float64, len(r.Jobs))
	for i, j := range r.Jobs {
		jcts[i] = math.Max(1, j.JCT())
	}
	slices.SortFunc(jcts, cmp.Compare[float64])
	xy := make(plotter.XYs, len(jcts))
	for i, x := range jcts {
		xy[i] = plotter.XY{X: x, Y: float64(i+1) / float64(len(jcts))}
	}
	return xy
}
