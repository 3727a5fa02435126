package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os/signal"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/cluster"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// explainSyncTimeout bounds the wait for the informers: a user who may not
// list pods or nodes gets one line instead of a command that never ends.
const explainSyncTimeout = time.Minute

// explainOptions are edl explain's flags: the controller's, which set the
// plan's options, and what to show.
type explainOptions struct {
	options
	namespace string
	output    string
	job       string
}

// errUsage marks a mistake of the user's — a flag, a job or namespace that
// does not exist, a kubeconfig that cannot be read — which exits 2.
var errUsage = errors.New("usage")

// usageError wraps a user's mistake as one line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Is(target error) bool {
	return target == errUsage
}

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// runExplain is `edl explain`: one plan on the live cluster, printed.
func runExplain(args []string, stdout, stderr io.Writer) int {
	opts, err := parseExplainFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "edl explain: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	report, err := explainLive(ctx, opts, stderr)
	if err == nil {
		err = printReport(stdout, report, opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "edl explain: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// parseExplainFlags parses edl explain's arguments: the controller's flags,
// -n, -o and at most one job name, in any order.
func parseExplainFlags(args []string, stdout io.Writer) (explainOptions, error) {
	var o explainOptions
	fs := flag.NewFlagSet("edl explain", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addFlags(fs, &o.options)
	fs.StringVar(&o.namespace, "n", "", "show the jobs of this namespace only (with JOB: the kubeconfig's namespace, else default)")
	fs.StringVar(&o.output, "o", "table", "output format: table or json")
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fmt.Fprintln(stdout, "Usage: edl explain [flags] [-n NAMESPACE] [-o table|json] [JOB]")
				fmt.Fprintln(stdout, "Plans once on the live cluster, as the controller's next cycle would, writes nothing, and prints why every job has the trainers it has.")
				fmt.Fprintln(stdout, "Give it the flags the running controller was started with: they set the plan's options.")
				fs.PrintDefaults()
				return o, err
			}
			return o, usagef("%v (run 'edl explain -help' for the flags)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) > 1 {
		return o, usagef("unexpected argument %q: name at most one job", positional[1])
	}
	if len(positional) == 1 {
		o.job = positional[0]
	}
	if o.output != "table" && o.output != "json" {
		return o, usagef("invalid value %q for flag -o: must be table or json", o.output)
	}
	if err := applyConfig(fs, &o.options, validate); err != nil {
		return o, &usageError{err.Error()}
	}
	return o, nil
}

// explainLive connects, waits for the informers, plans once and returns the
// report of the jobs asked for.
func explainLive(ctx context.Context, opts explainOptions, stderr io.Writer) (autoscaler.Report, error) {
	logger, err := newLogger(opts.logLevel, stderr)
	if err != nil {
		return autoscaler.Report{}, &usageError{err.Error()}
	}
	routeKlog(logger)
	cfg, err := clientConfig(opts.options)
	if err != nil {
		return autoscaler.Report{}, &usageError{err.Error()}
	}
	if opts.job != "" && opts.namespace == "" {
		opts.namespace = kubeconfigNamespace(opts.kubeconfig)
	}
	if err := checkServer(ctx, cfg); err != nil {
		return autoscaler.Report{}, err
	}
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return autoscaler.Report{}, fmt.Errorf("create Kubernetes client: %w", err)
	}
	tjClient, err := tjclient.NewForConfig(cfg)
	if err != nil {
		return autoscaler.Report{}, fmt.Errorf("create TrainingJob client: %w", err)
	}
	if err := checkNamespace(ctx, kubeClient, opts.namespace); err != nil {
		return autoscaler.Report{}, err
	}
	w, err := newWatch(opts.options, kubeClient, tjClient, logger)
	if err != nil {
		return autoscaler.Report{}, err
	}
	// The same autoscaler as the controller's, which Explain never lets
	// write: no recorder, no metrics.
	scaler := newScaler(opts.options, w, kubeClient, tjClient, nil, logger, nil)
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer func() {
		stopInformers()
		w.kubeInformers.Shutdown()
		w.jobInformers.Shutdown()
	}()
	w.kubeInformers.Start(informersCtx.Done())
	w.jobInformers.Start(informersCtx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, explainSyncTimeout)
	defer cancel()
	if !scaler.WaitForSync(syncCtx) {
		if ctx.Err() != nil {
			return autoscaler.Report{}, errors.New("interrupted")
		}
		return autoscaler.Report{}, fmt.Errorf("the informers did not sync within %v: may the kubeconfig's user list and watch pods, nodes, ResourceQuotas, ReplicaSets, PriorityClasses and TrainingJobs?", explainSyncTimeout)
	}
	return filterReport(scaler.Explain(), opts.namespace, opts.job)
}

// kubeconfigNamespace is the namespace of the kubeconfig's current context,
// else "default".
func kubeconfigNamespace(path string) string {
	if path == "" {
		return metav1.NamespaceDefault
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}

// checkNamespace fails with one line when ns does not exist. A user who may
// not read namespaces is not stopped: the jobs listed tell.
func checkNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	if ns == "" {
		return nil
	}
	_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return usagef("namespace %q not found", ns)
	}
	return nil
}

// filterReport keeps the jobs of namespace ns ("" for all), or only job
// name in it; an unknown job is the user's mistake.
func filterReport(r autoscaler.Report, ns, name string) (autoscaler.Report, error) {
	if ns == "" && name == "" {
		return r, nil
	}
	var kept []autoscaler.JobReport
	for _, j := range r.Jobs {
		if (ns == "" || j.Namespace == ns) && (name == "" || j.Name == name) {
			kept = append(kept, j)
		}
	}
	if name != "" && len(kept) == 0 {
		return r, usagef("TrainingJob %s/%s not found", ns, name)
	}
	r.Jobs = kept
	return r, nil
}

// printReport writes the report as a block per job and the cluster line, or
// as JSON.
func printReport(w io.Writer, r autoscaler.Report, opts explainOptions) error {
	if opts.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	if len(r.Jobs) == 0 {
		where := "in the cluster"
		if opts.namespace != "" {
			where = "in namespace " + opts.namespace
		}
		fmt.Fprintf(&b, "No TrainingJobs %s.\n\n", where)
	}
	for _, j := range r.Jobs {
		phase := j.Phase
		if phase == "" {
			phase = "not started"
		}
		fmt.Fprintf(&b, "%s/%s (%s, priority %d)\n", j.Namespace, j.Name, phase, j.Priority)
		fmt.Fprintf(&b, "  trainers     %d asked for (%d running), min %d, max %d\n", j.From, j.Running, j.Min, j.Max)
		if j.Phase == "Running" && j.Limit != autoscaler.LimitNotElastic {
			fmt.Fprintf(&b, "  fulfillment  %s (%d placed after the next cycle)\n", formatRatio(j.Fulfillment), j.Placed)
		}
		next := "nothing"
		if j.Next != nil {
			next = fmt.Sprintf("%d -> %d (%s): %s", j.Next.From, j.Next.To, j.Next.Cause, j.Next.Reason)
		}
		fmt.Fprintf(&b, "  next cycle   %s\n", next)
		limit := string(j.Limit)
		if j.Limit == autoscaler.LimitCoolDown && opts.autoscaleInterval > 0 {
			cycles := int(math.Ceil(float64(j.CoolDownLeft) / float64(opts.autoscaleInterval)))
			limit += fmt.Sprintf(" (%d cycles, %v left)", cycles, j.CoolDownLeft.Round(time.Second))
		}
		fmt.Fprintf(&b, "  limited by   %s: %s\n\n", limit, j.Message)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, clusterText(r))
	return err
}

func clusterText(r autoscaler.Report) string {
	c := r.Cluster
	var loads []string
	for _, name := range []string{"CPU", "memory", "GPU"} {
		if l, ok := c.Load[name]; ok {
			loads = append(loads, name+" "+formatRatio(l))
		}
	}
	return fmt.Sprintf("cluster: %d nodes; allocatable %s; requested %s; load %s (max_load_desired %s); %d pods wait for a node",
		c.Nodes, c.Allocatable, c.Requested, strings.Join(loads, ", "), formatRatio(effectiveThreshold(r.Options.MaxLoadDesired)), c.Pending)
}

func effectiveThreshold(t float64) float64 {
	if t > 0 {
		return t
	}
	return autoscaler.DefaultMaxLoadDesired
}

// formatRatio renders a load or fulfillment with up to three decimals.
func formatRatio(f float64) string {
	return cluster.FormatMilli(int64(math.Round(f * 1000)))
}
