package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/framework"
)

// pct and pts format a share and a difference of shares as the docs do.
func pct(v float64) string    { return fmt.Sprintf("%.1f%%", 100*v) }
func pts(a, b float64) string { return fmt.Sprintf("%.1f", 100*(a-b)) }

// mdTable is one Markdown table of a page: its cells by row label and by
// column header.
type mdTable struct {
	columns []string
	rows    map[string][]string
}

// mdTables reads the page's tables by the first cell of their header.
func mdTables(text string) map[string]mdTable {
	out := map[string]mdTable{}
	lines := strings.Split(text, "\n")
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(strings.ReplaceAll(parts[i], "**", ""))
		}
		return parts
	}
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") || !strings.HasPrefix(lines[i+1], "|---") {
			continue
		}
		header := cells(lines[i])
		t := mdTable{columns: header[1:], rows: map[string][]string{}}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			row := cells(lines[i])
			t.rows[row[0]] = row[1:]
		}
		if _, seen := out[header[0]]; !seen {
			out[header[0]] = t
		}
	}
	return out
}

// variantOf is the run a column header names: the label in backticks, or
// the whole header.
var backticked = regexp.MustCompile("`([^`]+)`")

func variantOf(header string) string {
	if m := backticked.FindStringSubmatch(header); m != nil {
		return m[1]
	}
	return header
}

// summaries are the committed runs of a size, summarized from their CSVs.
func summaries(t *testing.T, size string) (map[string]Summary, map[string]*Result) {
	t.Helper()
	runs := committedRuns(t, size)
	out := map[string]Summary{}
	for name, r := range runs {
		out[name] = Summarize(r)
	}
	return out, runs
}

// levelGap is what f measures over the levels [from, to) of the run, in
// points of its window's mean.
func levelGap(levels []Level, from, to int, f func(Level) float64) string {
	var sum float64
	n := 0
	for i, l := range levels {
		n += l.Samples
		if i >= from && i < to {
			sum += f(l) * float64(l.Samples)
		}
	}
	return fmt.Sprintf("%.1f", 100*sum/float64(n))
}

// ideal and ofTrainers are a sample's gaps to the ideal and to the bound of
// the trainers.
func ideal(s Sample) float64      { return s.Ideal - s.Utilization }
func ofTrainers(s Sample) float64 { return s.IdealTrainers - s.Utilization }

// phaseGap is what gap measures over the samples from a to b seconds, in
// points of the run's mean over all its samples.
func phaseGap(r *Result, a, b float64, gap func(Sample) float64) string {
	var sum float64
	for _, s := range r.Samples {
		if t := s.At.Seconds(); t >= a && t < b {
			sum += gap(s)
		}
	}
	return fmt.Sprintf("%.1f", 100*sum/float64(len(r.Samples)))
}

// atEnd is the last sample's utilization, Running trainers and the range
// of the trainers per job ("30–33").
func atEnd(r *Result) (util float64, trainers int, perJob string) {
	last := r.Samples[len(r.Samples)-1]
	lo, hi := -1, 0
	for _, j := range last.Jobs {
		if lo < 0 || j.Running < lo {
			lo = j.Running
		}
		hi = max(hi, j.Running)
	}
	return last.Utilization, last.RunningTrainers, fmt.Sprintf("%d–%d", lo, hi)
}

// TestDocsTablesAreTheCSVs: the figures of the tables that come from the
// samples — in docs/experiments*.md (the full size) and in each size's
// results.md and results-pools.md — are the means of the committed CSVs.
func TestDocsTablesAreTheCSVs(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	read := func(rel ...string) string {
		text, err := os.ReadFile(filepath.Join(append([]string{root}, rel...)...))
		require.NoError(t, err)
		return string(text)
	}
	full, fullRuns := summaries(t, "full")
	quick, quickRuns := summaries(t, "quick")
	assert.Greater(t, checkTables(t, "experiments*.md", experimentPages(t), full, fullRuns, true), 40)
	for size, s := range map[string]map[string]Summary{"full": full, "quick": quick} {
		runs := map[string]map[string]*Result{"full": fullRuns, "quick": quickRuns}[size]
		for _, name := range []string{"results.md", "results-pools.md", "results-teams.md"} {
			if _, err := os.Stat(filepath.Join(root, "docs", "experiments", size, name)); os.IsNotExist(err) && name == "results-teams.md" {
				continue // experiment 4 is not measured at every size
			}
			assert.Greater(t, checkTables(t, size+"/"+name, read("docs", "experiments", size, name), s, runs, false), 5, "%s/%s", size, name)
		}
	}
}

// checkTables checks the tables of one page against the runs' summaries and
// returns how many figures it checked; withUseful requires the useful
// utilization's row.
func checkTables(t *testing.T, page, text string, full map[string]Summary, runs map[string]*Result, withUseful bool) int {
	t.Helper()
	tables := mdTables(text)
	rows := map[string]func(Summary) string{
		UsefulRow:                         func(s Summary) string { return pct(s.MeanUseful) },
		"mean CPU allocation utilization": func(s Summary) string { return pct(s.MeanUtilization) },
		"ideal bound (mean)":              func(s Summary) string { return pct(s.MeanIdeal) },
		aroundRow:                         func(s Summary) string { return pct(s.MeanIdealAround) },
		FixedRow:                          func(s Summary) string { return pct(s.MeanIdealFixed) },
		trainersRow:                       func(s Summary) string { return pct(s.MeanIdealTrainers) },
		HeldRow:                           func(s Summary) string { return pct(s.MeanHeldWaiting) + " / " + pct(s.MostHeldWaiting) },
		HeldByRoleRow: func(s Summary) string {
			return pct(s.MeanHeldByRole.Master) + " / " + pct(s.MeanHeldByRole.Pserver) + " / " + pct(s.MeanHeldByRole.Trainer)
		},
		"mean trainers Running": func(s Summary) string { return fmt.Sprintf("%.0f", s.MeanTrainers) },
		teamsDeviationRow: func(s Summary) string {
			return fmt.Sprintf("%.1f / %.1f (%d samples)", s.Teams.DeviationP95, s.Teams.DeviationMax, s.Teams.FairSamples)
		},
	}
	pool := func(name string, f func(PoolSummary) float64) func(Summary) string {
		return func(s Summary) string {
			for _, p := range s.Pools {
				if p.Name == name {
					return pct(f(p))
				}
			}
			return "no pool " + name
		}
	}
	for _, name := range []string{CPUPool, GPUPool} {
		res := strings.ToUpper(string(CPU))
		if name == GPUPool {
			res = strings.ToUpper(string(GPU))
		}
		rows[name+" pool: mean useful "+res+" utilization"] = pool(name, func(p PoolSummary) float64 { return p.MeanUseful })
		rows[name+" pool: mean "+res+" allocation utilization"] = pool(name, func(p PoolSummary) float64 { return p.MeanUtilization })
		rows[name+" pool: ideal bound (mean)"] = pool(name, func(p PoolSummary) float64 { return p.MeanIdeal })
	}
	rows["cpu pool: "+FixedRow] = pool(CPUPool, func(p PoolSummary) float64 { return p.MeanIdealFixed })
	rows["cpu pool: "+aroundRow] = pool(CPUPool, func(p PoolSummary) float64 { return p.MeanIdealAround })
	rows["cpu pool: "+trainersRow] = pool(CPUPool, func(p PoolSummary) float64 { return p.MeanIdealTrainers })

	checked := 0
	for _, scenario := range []Scenario{Training, Shared, Pools, Teams} {
		table, ok := tables[string(scenario)]
		if !ok {
			continue
		}
		useful := UsefulRow
		if scenario == Pools {
			useful = "cpu pool: mean useful CPU utilization"
		}
		if withUseful {
			assert.Contains(t, table.rows, useful, "%s, %s: the useful utilization", page, scenario)
		}
		for i, header := range table.columns {
			name := string(scenario) + "-" + variantOf(header)
			s, ok := full[name]
			if !ok {
				continue // the original's columns
			}
			for label, f := range rows {
				if cells, ok := table.rows[label]; ok {
					assert.True(t, strings.HasPrefix(cells[i], f(s)), "%s, %s, %s: %q in the docs, %q from the CSV", page, name, label, cells[i], f(s))
					checked++
				}
			}
			if cells, ok := table.rows[FixedRow]; ok && s.FixedDerived {
				assert.True(t, strings.HasSuffix(cells[i], "(derived)"), "%s, %s: the bound of what EDL cannot influence is marked derived", page, name)
			}
			if cells, ok := table.rows["trainers per job at the end"]; ok && regexp.MustCompile(`^\d+–\d+$`).MatchString(cells[i]) {
				_, _, perJob := atEnd(runs[name])
				assert.Equal(t, perJob, cells[i], "%s, %s: trainers per job at the end", page, name)
				checked++
			}
		}
	}
	for name, r := range runs {
		table, ok := tables[fmt.Sprintf("%s, %s, by level", r.Scenario, r.Variant.Label())]
		if !ok {
			continue
		}
		want := mdTables(LevelTable(r))[fmt.Sprintf("%s, %s, by level", r.Scenario, r.Variant.Label())]
		require.Equal(t, want.columns, table.columns, "%s: %s by level", page, name)
		levels := Levels(r)
		for label, f := range map[string]func(Level) float64{
			"mean utilization": func(l Level) float64 { return l.Utilization }, "ideal bound": func(l Level) float64 { return l.Ideal },
			LevelFixedRow: func(l Level) float64 { return l.Fixed }, "with the web pods where kube-scheduler put them": func(l Level) float64 { return l.Around },
			"bound of the trainers": func(l Level) float64 { return l.Trainers },
		} {
			require.Len(t, table.rows[label], len(levels), "%s: %s by level, %s", page, name, label)
			for i, l := range levels {
				// A figure rounded from the run's exact mean is within half
				// a tenth of the CSV's, whose ratios keep 4 decimals.
				var got float64
				_, err := fmt.Sscanf(table.rows[label][i], "%f%%", &got)
				require.NoError(t, err)
				assert.InDelta(t, 100*f(l), got, 0.0551, "%s: %s by level, %s, level %d", page, name, label, i+1)
			}
		}
		checked++
	}
	return checked
}

// experimentPages are the pages of the full-size experiments, one after the
// other: docs/experiments.md (experiments 1 and 2, the targets, the quick
// size) and the page of each experiment of its own.
func experimentPages(t *testing.T) string {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	var text strings.Builder
	for _, page := range []string{"experiments.md", "experiments-pools.md", "experiments-teams.md"} {
		data, err := os.ReadFile(filepath.Join(root, "docs", page))
		require.NoError(t, err)
		text.Write(data)
		text.WriteString("\n")
	}
	return text.String()
}

// TestDocsHeadlineFiguresAreTheCSVs: the figures docs/experiments.md and the
// pages of experiments 3 and 4 quote in their text are those of the committed
// CSVs they come from.
func TestDocsHeadlineFiguresAreTheCSVs(t *testing.T) {
	text := strings.Join(strings.Fields(experimentPages(t)), " ")
	full, runs := summaries(t, "full")
	quick, _ := summaries(t, "quick")
	edl, off := full["training-edl"], full["training-no-edl"]
	shared, binpack, sharedOff := full["shared-edl"], full["shared-edl+binpack"], full["shared-no-edl"]
	var cpu PoolSummary
	for _, p := range full["pools-edl"].Pools {
		if p.Name == CPUPool {
			cpu = p
		}
	}
	qcpu := func(run string) PoolSummary {
		for _, p := range quick[run].Pools {
			if p.Name == CPUPool {
				return p
			}
		}
		return PoolSummary{}
	}
	trainingEnd, _, _ := atEnd(runs["training-edl"])
	sharedEnd, sharedTrainers, sharedPerJob := atEnd(runs["shared-edl"])
	_, _, binpackPerJob := atEnd(runs["shared-edl+binpack"])
	offEnd := runs["training-no-edl"].Samples[len(runs["training-no-edl"].Samples)-1]
	levels := Levels(runs["shared-edl"])
	for _, want := range []string{
		// Experiment 1.
		fmt.Sprintf("EDL is %s points ahead: %s against %s", pts(edl.MeanUseful, off.MeanUseful), pct(edl.MeanUseful), pct(off.MeanUseful)),
		fmt.Sprintf("hold %s of the CPU on average (%s at most): %s points of it trainers", pct(off.MeanHeldWaiting), pct(off.MostHeldWaiting),
			fmt.Sprintf("%.1f", 100*off.MeanHeldByRole.Trainer)),
		fmt.Sprintf("and %.1f points pservers. At the end they hold %d CPU", 100*off.MeanHeldByRole.Pserver, offEnd.CPUHeldWaitingMilli/1000),
		fmt.Sprintf("the cluster at %s, against the packing bound's", pct(trainingEnd)),
		fmt.Sprintf("The mean (%s) is %s points below running without EDL", pct(edl.MeanUtilization), pts(off.MeanUtilization, edl.MeanUtilization)),
		fmt.Sprintf("the useful utilization (%s against %s) is %s points above it", pct(edl.MeanUseful), pct(off.MeanUseful), pts(edl.MeanUseful, off.MeanUseful)),
		fmt.Sprintf("the ramp (0–32 s) %s points of the mean, %s of them below the bound of the trainers",
			phaseGap(runs["training-edl"], 0, 32, ideal), phaseGap(runs["training-edl"], 0, 32, ofTrainers)),
		fmt.Sprintf("from 32 to 88 s %s (%s below the bound of the trainers); the steady state %s points",
			phaseGap(runs["training-edl"], 32, 88, ideal), phaseGap(runs["training-edl"], 32, 88, ofTrainers), phaseGap(runs["training-edl"], 88, 1e9, ideal)),
		fmt.Sprintf("the ramp costs %s points and the run came within %s points of the ideal (%s)", phaseGap(runs["training-edl+nogang"], 0, 32, ideal),
			pts(full["training-edl+nogang"].MeanIdeal, full["training-edl+nogang"].MeanUtilization), pct(full["training-edl+nogang"].MeanUtilization)),
		// Experiment 2.
		fmt.Sprintf("utilization from %s to %s", pct(sharedOff.MeanUtilization), pct(shared.MeanUtilization)),
		fmt.Sprintf("reaches more than %s (%s)", pct(shared.MeanIdealAround), pct(binpack.MeanIdealAround)),
		fmt.Sprintf("%s of the %s points are lost where the web pods run", pts(shared.MeanIdeal, shared.MeanIdealAround), pts(shared.MeanIdeal, shared.MeanUtilization)),
		fmt.Sprintf("above the %s any placement of the", pct(shared.MeanIdealAround)),
		fmt.Sprintf("At the end of the run %d trainers run and none is pending, at %s", sharedTrainers, pct(sharedEnd)),
		fmt.Sprintf("%s trainers each at the end (`edl`), %s with bin-packing", sharedPerJob, binpackPerJob),
		fmt.Sprintf("the bound with the web pods where kube-scheduler put them %s (%s), the bound of the trainers %s (%s)",
			pct(shared.MeanIdealAround), pct(binpack.MeanIdealAround), pct(shared.MeanIdealTrainers), pct(binpack.MeanIdealTrainers)),
		fmt.Sprintf("the web pods' placement (%s points with the default scheduler), the pservers' (%s), growth lag after each step (%s",
			pts(shared.MeanIdeal, shared.MeanIdealAround), pts(shared.MeanIdealAround, shared.MeanIdealTrainers), pts(shared.MeanIdealTrainers, shared.MeanUtilization)),
		fmt.Sprintf("the mean could reach at most %s; EDL is %s points below that: %s the up-steps' web pods' placement, %s the pservers' and %s the regrowth",
			pct(shared.MeanIdealFixed), pts(shared.MeanIdealFixed, shared.MeanUtilization), levelGap(levels, 4, 7, func(l Level) float64 { return l.Fixed - l.Around }),
			levelGap(levels, 0, 7, func(l Level) float64 { return l.Around - l.Trainers }), levelGap(levels, 0, 7, func(l Level) float64 { return l.Trainers - l.Utilization })),
		fmt.Sprintf("%s are in levels 1–4, where every web pod runs where it was placed before any job, and %s in levels 5–7",
			levelGap(levels, 0, 4, func(l Level) float64 { return l.Ideal - l.Around }), levelGap(levels, 4, 7, func(l Level) float64 { return l.Ideal - l.Around })),
		fmt.Sprintf("With bin-packing the bound is %s and EDL is %s points below it", pct(binpack.MeanIdealFixed), pts(binpack.MeanIdealFixed, binpack.MeanUtilization)),
		fmt.Sprintf("the bound of what EDL cannot influence at most %s (%s)", pct(shared.MeanIdealFixed), pct(binpack.MeanIdealFixed)),
		fmt.Sprintf("the most EDL could reach is %s (%s): EDL is %s points below what it cannot influence", pct(shared.MeanIdealFixed),
			pct(binpack.MeanIdealFixed), pts(shared.MeanIdealFixed, shared.MeanUtilization)),
		// Experiment 3.
		fmt.Sprintf("Of the CPU pool's %s points under its ideal, %s are where the web pods run", pts(cpu.MeanIdeal, cpu.MeanUtilization), pts(cpu.MeanIdeal, cpu.MeanIdealAround)),
		fmt.Sprintf("%s where the pservers went and %s are EDL's", pts(cpu.MeanIdealAround, cpu.MeanIdealTrainers), pts(cpu.MeanIdealTrainers, cpu.MeanUtilization)),
		// The quick size.
		fmt.Sprintf("experiment 1 %s / %s / — / %s (EDL off %s", pct(quick["training-edl"].MeanUtilization), pct(quick["training-edl"].MeanIdeal),
			pct(quick["training-edl"].MeanIdealTrainers), pct(quick["training-no-edl"].MeanUtilization)),
		fmt.Sprintf("experiment 2 %s / %s / %s / %s (EDL off %s", pct(quick["shared-edl"].MeanUtilization), pct(quick["shared-edl"].MeanIdeal),
			pct(quick["shared-edl"].MeanIdealAround), pct(quick["shared-edl"].MeanIdealTrainers), pct(quick["shared-no-edl"].MeanUtilization)),
		fmt.Sprintf("CPU pool %s / %s / %s / %s (EDL off %s)", pct(qcpu("pools-edl").MeanUtilization), pct(qcpu("pools-edl").MeanIdeal),
			pct(qcpu("pools-edl").MeanIdealAround), pct(qcpu("pools-edl").MeanIdealTrainers), pct(qcpu("pools-no-edl").MeanUtilization)),
		fmt.Sprintf("experiment 1's useful utilization %s against %s without EDL", pct(quick["training-edl"].MeanUseful), pct(quick["training-no-edl"].MeanUseful)),
		fmt.Sprintf("Experiment 2's bound of what EDL cannot influence, measured (CSV column `ideal_fixed`), is %s, EDL %s points below it",
			pct(quick["shared-edl"].MeanIdealFixed), pts(quick["shared-edl"].MeanIdealFixed, quick["shared-edl"].MeanUtilization)),
		fmt.Sprintf("every scenario (%s, %s and %s points below it)", pts(quick["training-edl"].MeanIdealTrainers, quick["training-edl"].MeanUtilization),
			pts(quick["shared-edl"].MeanIdealTrainers, quick["shared-edl"].MeanUtilization), pts(qcpu("pools-edl").MeanIdealTrainers, qcpu("pools-edl").MeanUtilization)),
		fmt.Sprintf("at the full size experiment 3's CPU pool is %s points below it, experiment 1 %s (the ramp, above) and experiment 2 %s",
			pts(cpu.MeanIdealTrainers, cpu.MeanUtilization), pts(edl.MeanIdealTrainers, edl.MeanUtilization), pts(shared.MeanIdealTrainers, shared.MeanUtilization)),
	} {
		assert.True(t, strings.Contains(text, want), "docs/experiments*.md do not say %q", want)
	}
}
