// Command scale runs the edl binary on a control plane with many kwok nodes,
// TrainingJobs in several namespaces and a web service of higher priority,
// measures edl from outside (memory, CPU, requests, reaction to a wave, a
// cycle's cost) and writes the figures between the result markers of
// -out (docs/scale.md), its plots beside it in scale/. make scale runs it.
//
//	go run ./test/cmd/scale -edl bin/edl -nodes 300 -jobs 50
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

	"github.com/paddlepaddle/edl/test/framework"
	"github.com/paddlepaddle/edl/test/scale"
)

// The markers between which the results go in -out.
const (
	beginMarker = "<!-- make scale: results begin -->"
	endMarker   = "<!-- make scale: results end -->"
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
	flag.IntVar(&c.Jobs, "jobs", c.Jobs, "TrainingJobs")
	flag.IntVar(&c.Namespaces, "namespaces", c.Namespaces, "namespaces the jobs are spread over")
	flag.DurationVar(&c.Interval, "interval", c.Interval, "edl's -autoscale_interval")
	flag.DurationVar(&c.Steady, "steady", c.Steady, "the steady window in which edl's requests are counted")
	flag.DurationVar(&c.SettleTimeout, "settle_timeout", c.SettleTimeout, "how long each step may take to settle")
	edlBin := flag.String("edl", "bin/edl", "the edl binary (make build)")
	out := flag.String("out", filepath.Join("docs", "scale.md"), "the Markdown file whose results section is rewritten")
	workDir := flag.String("workdir", filepath.Join(framework.CacheDir(), "scale"), "directory for the run's logs")
	flag.Parse()
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
	plots := filepath.Join(filepath.Dir(*out), "scale")
	if err := os.MkdirAll(plots, 0o755); err != nil {
		return err
	}
	memory, requests, err := scale.Plot(plots, res)
	if err != nil {
		return err
	}
	command := fmt.Sprintf("make scale NODES=%d JOBS=%d NAMESPACES=%d", c.Nodes, c.Jobs, c.Namespaces)
	if c.Steady != scale.DefaultConfig.Steady {
		command += " STEADY=" + c.Steady.String()
	}
	results := scale.Markdown(res, command) +
		fmt.Sprintf("![edl's memory](scale/%s)\n\n![edl's requests](scale/%s)\n", filepath.Base(memory), filepath.Base(requests))
	fmt.Println(results)
	return splice(*out, results)
}

// splice writes results between the markers of the file at path, or makes a
// file of the markers and the results if there is none.
func splice(path, results string) error {
	doc, err := os.ReadFile(path) // #nosec G304 -- the -out flag
	if os.IsNotExist(err) {
		doc, err = []byte("# EDL at scale\n\n"+beginMarker+"\n"+endMarker+"\n"), nil
	}
	if err != nil {
		return err
	}
	text := string(doc)
	begin, end := strings.Index(text, beginMarker), strings.Index(text, endMarker)
	if begin < 0 || end < begin {
		return fmt.Errorf("%s: no %q … %q section for the results", path, beginMarker, endMarker)
	}
	text = text[:begin+len(beginMarker)] + "\n" + results + text[end:]
	return os.WriteFile(path, []byte(text), 0o644) // #nosec G703 -- the -out flag, as read above
}
