// Command scale runs the edl binary on a control plane with many kwok nodes,
// TrainingJobs in several namespaces and a web service of higher priority,
// measures edl from outside (memory, CPU, requests, reaction to a wave, a
// cycle's cost) and writes the figures between the result markers of
// -out (docs/scale.md), its plots beside it in scale/, its headline figures
// in scale/runs/nodes-N.json and, from all of those, the table and plots of
// the runs by size. The whole result is kept in -workdir as result.json.
// make scale runs it.
//
//	go run ./test/cmd/scale -edl bin/edl -nodes 300 -jobs 50
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/paddlepaddle/edl/test/framework"
	"github.com/paddlepaddle/edl/test/scale"
)

// The markers between which the last run's results and the table of the
// runs by size go in -out.
const (
	beginMarker      = "<!-- make scale: results begin -->"
	endMarker        = "<!-- make scale: results end -->"
	sizesBeginMarker = "<!-- make scale: sizes begin -->"
	sizesEndMarker   = "<!-- make scale: sizes end -->"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	c := scale.DefaultConfig
	flag.IntVar(&c.Nodes, "nodes", c.Nodes, "kwok nodes")
	flag.IntVar(&c.NodeCPU, "node_cpu", c.NodeCPU, "CPUs of a node")
	flag.IntVar(&c.Jobs, "jobs", 0, "TrainingJobs (0: one per 6 nodes)")
	flag.IntVar(&c.Namespaces, "namespaces", 0, "namespaces the jobs are spread over (0: one per 10 jobs)")
	flag.DurationVar(&c.Interval, "interval", c.Interval, "edl's -autoscale_interval")
	flag.DurationVar(&c.Steady, "steady", c.Steady, "the steady window in which edl's requests are counted")
	flag.DurationVar(&c.SettleTimeout, "settle_timeout", c.SettleTimeout, "how long each step may take to settle")
	edlBin := flag.String("edl", "bin/edl", "the edl binary (make build)")
	edlFlags := flag.String("edl_flags", "", "more flags for edl, space-separated (an A/B of one of its options: \"-kube_api_qps=300 -kube_api_burst=600\")")
	out := flag.String("out", filepath.Join("docs", "scale.md"), "the Markdown file whose results section is rewritten")
	workDir := flag.String("workdir", filepath.Join(framework.CacheDir(), "scale"), "directory for the run's logs")
	from := flag.String("from", "", "write the docs from this result.json of an earlier run instead of running")
	flag.Parse()
	c.EDLFlags = strings.Fields(*edlFlags)
	if *from != "" {
		b, err := os.ReadFile(*from) // #nosec G304 -- the -from flag
		if err != nil {
			return err
		}
		var res scale.Result
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		return write(&res, *out)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["settle_timeout"] { // a minute per 100 nodes, at least the default
		c.SettleTimeout = max(c.SettleTimeout, time.Duration(c.Nodes/100)*time.Minute)
	}
	if c.Jobs == 0 {
		c.Jobs = max(1, c.Nodes/6)
	}
	if c.Namespaces == 0 {
		c.Namespaces = max(1, c.Jobs/10)
	}
	bin, err := filepath.Abs(*edlBin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the edl binary: %w (run make build)", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := scale.Run(ctx, scale.Options{Config: c, EDL: bin, Dir: *workDir, Progress: os.Stdout})
	if err != nil {
		return err
	}
	// The whole run, for a look beyond the docs' figures and for -from.
	b, err := json.MarshalIndent(res, "", " ")
	if err == nil {
		err = os.WriteFile(filepath.Join(*workDir, "result.json"), b, 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale: keep the result: %v\n", err)
	}
	return write(res, *out)
}

// write puts a run's results into out and its plots beside it, keeps its
// headline figures in scale/runs and rewrites the table of the runs by size.
func write(res *scale.Result, out string) error {
	c := res.Config
	plots := filepath.Join(filepath.Dir(out), "scale")
	if err := os.MkdirAll(plots, 0o755); err != nil {
		return err
	}
	memory, requests, err := scale.Plot(plots, res)
	if err != nil {
		return err
	}
	command := fmt.Sprintf("make scale NODES=%d", c.Nodes)
	if c.Jobs != max(1, c.Nodes/6) || c.Namespaces != max(1, c.Jobs/10) {
		command += fmt.Sprintf(" JOBS=%d NAMESPACES=%d", c.Jobs, c.Namespaces)
	}
	if c.NodeCPU != scale.DefaultConfig.NodeCPU {
		command += fmt.Sprintf(" SCALE_FLAGS=-node_cpu=%d", c.NodeCPU)
	}
	if len(c.EDLFlags) > 0 {
		command += fmt.Sprintf(" SCALE_FLAGS='-edl_flags=\"%s\"'", strings.Join(c.EDLFlags, " "))
	}
	if c.Steady != scale.DefaultConfig.Steady {
		command += " STEADY=" + c.Steady.String()
	}
	results := scale.Markdown(res, command) +
		fmt.Sprintf("![edl's memory](scale/%s)\n\n![edl's requests](scale/%s)\n", filepath.Base(memory), filepath.Base(requests))
	fmt.Println(results)
	if err := splice(out, results, beginMarker, endMarker); err != nil {
		return err
	}
	runs := filepath.Join(plots, "runs")
	if err := scale.SaveSummary(runs, scale.Summarize(res)); err != nil {
		return err
	}
	summaries, err := scale.LoadSummaries(runs)
	if err != nil {
		return err
	}
	sizes, err := scale.PlotSizes(plots, summaries)
	if err != nil {
		return err
	}
	table := scale.SizesMarkdown(summaries) + "\n"
	for _, p := range sizes {
		table += fmt.Sprintf("![](scale/%s)\n", filepath.Base(p))
	}
	return splice(out, table, sizesBeginMarker, sizesEndMarker)
}

// splice writes text between the begin and end markers of the file at path,
// or makes a file of the markers and the text if there is none.
func splice(path, text, beginMarker, endMarker string) error {
	doc, err := os.ReadFile(path) // #nosec G304 -- the -out flag
	if os.IsNotExist(err) {
		doc, err = []byte("# EDL at scale\n\n"), nil
	}
	if err != nil {
		return err
	}
	old := string(doc)
	begin, end := strings.Index(old, beginMarker), strings.Index(old, endMarker)
	switch {
	case begin < 0 && end < 0:
		old += "\n" + beginMarker + "\n" + endMarker + "\n"
		begin, end = strings.Index(old, beginMarker), strings.Index(old, endMarker)
	case begin < 0 || end < begin:
		return fmt.Errorf("%s: no %q … %q section", path, beginMarker, endMarker)
	}
	old = old[:begin+len(beginMarker)] + "\n" + text + old[end:]
	return os.WriteFile(path, []byte(old), 0o644) // #nosec G703 -- the -out flag, as read above
}
