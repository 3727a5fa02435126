// Command experiment reproduces the original EDL report's two experiments,
// and runs the pools experiment (a CPU pool and a tainted GPU pool) and the
// teams experiment (three weighted teams, bursts of jobs), on the
// local control plane with kwok nodes, EDL on and off, and writes the
// samples (CSV), the figures (PNG) and the tables (results.md, or
// results-<scenarios>.md for another choice of scenarios) into -out.
// make experiment runs it; see docs/experiments.md.
//
//	go run ./test/cmd/experiment -size quick -edl bin/edl
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/paddlepaddle/edl/test/experiment"
	"github.com/paddlepaddle/edl/test/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "experiment: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		sizeName  = flag.String("size", "quick", "run size: "+strings.Join(experiment.SizeNames(), ", "))
		scenarios = flag.String("scenarios", defaultScenarios, "comma-separated scenarios: training, shared, pools, teams")
		variants  = map[experiment.Scenario]*string{
			experiment.Training: flag.String("training_variants", "edl,no-edl", "comma-separated runs of the training scenario: edl (EDL on), no-edl (EDL off), each optionally +load=X (edl -max_load_desired X) and +binpack (kube-scheduler scoring MostAllocated)"),
			experiment.Shared:   flag.String("shared_variants", "edl,no-edl", "comma-separated runs of the shared scenario, as -training_variants"),
			experiment.Pools:    flag.String("pools_variants", "edl,no-edl", "comma-separated runs of the pools scenario, as -training_variants"),
			experiment.Teams: flag.String("teams_variants", "edl,edl+noteams,quota", "comma-separated runs of the teams scenario: edl (TrainingQueues), edl+noteams (none: EDL shares by job), "+
				"quota (no TrainingQueues, a static ResourceQuota per team), each with the options of -training_variants"),
		}
		edlBin  = flag.String("edl", "bin/edl", "the edl binary (make build)")
		out     = flag.String("out", "", "directory for the CSVs, PNGs and results.md (default docs/experiments/<size>)")
		workDir = flag.String("workdir", "", "directory for the runs' logs (default $EDL_CACHE_DIR/experiment/<size>)")
		replot  = flag.Bool("replot", false, "run nothing: draw the figures again from the samples CSVs in -out")
		capped  = flag.Bool("cap_bounds", false, "run nothing: cap, sample by sample, the bounds that hold pods where they run at the ideal bound in every samples CSV in -out")
	)
	flag.Parse()
	size, err := experiment.LookupSize(*sizeName)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join("docs", "experiments", size.Name)
	}
	if *workDir == "" {
		*workDir = filepath.Join(framework.CacheDir(), "experiment", size.Name)
	}
	if *capped {
		return capBounds(*out)
	}
	bin, err := filepath.Abs(*edlBin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the edl binary: %w (run make build)", err)
	}

	if *replot {
		return redraw(*out, *scenarios, variants)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	fmt.Printf("size %s: autoscale interval %s (time compressed %.1f×); runs in %s, results in %s\n",
		size.Name, size.Interval, size.Compression, *workDir, *out)

	var report strings.Builder
	fmt.Fprintf(&report, "# EDL experiments, size %s\n\n", size.Name)
	fmt.Fprintf(&report, "Trainers %s CPU / %s, pservers %s CPU / %s, web pods %s CPU / %s, GPU trainers (pools) %s CPU / %s / %d GPU; "+
		"autoscale interval %s (the original's 5 s compressed %.1f×).\n\n",
		experiment.TrainerSize.CPU, experiment.TrainerSize.Memory, experiment.PserverSize.CPU, experiment.PserverSize.Memory,
		experiment.WebSize.CPU, experiment.WebSize.Memory, experiment.GPUTrainerSize.CPU, experiment.GPUTrainerSize.Memory,
		experiment.GPUTrainerSize.GPU, size.Interval, size.Compression)
	for _, sc := range split(*scenarios) {
		scenario := experiment.Scenario(sc)
		if variants[scenario] == nil {
			return fmt.Errorf("unknown scenario %q: training, shared, pools or teams", sc)
		}
		fmt.Fprintf(&report, "%s: kwok nodes %s.\n\n", scenario, experiment.DescribeNodes(size.NodeSpecs(scenario)))
		if scenario == experiment.Teams {
			fmt.Fprintf(&report, "%s.\n\n", experiment.DescribeTeams(size))
		}
		var results []*experiment.Result
		var summaries []experiment.Summary
		for _, label := range split(*variants[scenario]) {
			variant, err := experiment.ParseVariant(label)
			if err != nil {
				return err
			}
			res, err := experiment.Run(ctx, experiment.Options{
				Size: size, Scenario: scenario, Variant: variant, EDL: bin,
				Dir:      filepath.Join(*workDir, fmt.Sprintf("%s-%s", scenario, variant.Label())),
				Progress: os.Stdout,
			})
			if err != nil {
				return err
			}
			if _, err := experiment.WriteCSV(*out, res); err != nil {
				return err
			}
			results, summaries = append(results, res), append(summaries, experiment.Summarize(res))
			fmt.Printf("%-8s %-6s done in %s (control plane start %s); %d samples\n", scenario, variant.Label(),
				res.Wall.Round(time.Second), res.Setup.Round(time.Second), len(res.Samples))
			fmt.Fprintf(&report, "- %s, %s: run took %s wall (control plane with nodes %s), %d samples over %s.\n",
				scenario, variant.Label(), res.Wall.Round(time.Second), res.Setup.Round(time.Second), len(res.Samples), res.End.Round(time.Second))
		}
		png, err := experiment.PlotScenario(*out, scenario, results)
		if err != nil {
			return err
		}
		table := experiment.Table(scenario, summaries)
		if scenario == experiment.Shared || scenario == experiment.Pools {
			for _, res := range results {
				table += "\n" + experiment.LevelTable(res)
			}
		}
		fmt.Printf("\n%s\nplot: %s\n\n", table, png)
		fmt.Fprintf(&report, "\n%s\n![%s](%s)\n\n", table, scenario, filepath.Base(png))
	}
	fmt.Fprintf(&report, "Total wall time %s.\n", time.Since(began).Round(time.Second))
	path := filepath.Join(*out, reportName(*scenarios))
	if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("all done in %s; tables in %s\n", time.Since(began).Round(time.Second), path)
	return nil
}

// defaultScenarios are the original report's two experiments.
const defaultScenarios = "training,shared"

// reportName is the tables' file: results.md for the default scenarios,
// results-<scenarios>.md for another choice, so that a run of one scenario
// keeps the others' tables.
func reportName(scenarios string) string {
	names := split(scenarios)
	if strings.Join(names, ",") == defaultScenarios {
		return "results.md"
	}
	return "results-" + strings.Join(names, "-") + ".md"
}

// redraw draws each scenario's figure again from the samples CSVs in dir.
func redraw(dir, scenarios string, variants map[experiment.Scenario]*string) error {
	for _, sc := range split(scenarios) {
		scenario := experiment.Scenario(sc)
		if variants[scenario] == nil {
			return fmt.Errorf("unknown scenario %q: training, shared, pools or teams", sc)
		}
		var results []*experiment.Result
		for _, label := range split(*variants[scenario]) {
			variant, err := experiment.ParseVariant(label)
			if err != nil {
				return err
			}
			res, err := experiment.ReadResult(dir, scenario, variant)
			if err != nil {
				return err
			}
			results = append(results, res)
		}
		png, err := experiment.PlotScenario(dir, scenario, results)
		if err != nil {
			return err
		}
		fmt.Printf("plot: %s\n", png)
	}
	return nil
}

// capBounds caps the bounds of every samples CSV in dir at their ideal.
func capBounds(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*-samples.csv"))
	if err != nil {
		return err
	}
	for _, path := range paths {
		n, err := experiment.CapBounds(path)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d bounds capped at the ideal\n", path, n)
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
