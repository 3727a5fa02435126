package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddlepaddle/edl/pkg/explain"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

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

// runExplain is `edl explain`: one plan on the live cluster, printed. It is
// kubectl edl explain for scripts and for what-ifs: the same package
// (pkg/explain) with the same configuration from the Lease, and the
// controller's flags, when given, override it.
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
	res, err := explainLive(ctx, opts, stderr)
	if err == nil {
		err = explain.Print(stdout, res, opts.output, opts.namespace)
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
				fmt.Fprintln(stdout, "It plans with the options the running controller published on its Lease in -leader_elect_namespace;")
				fmt.Fprintln(stdout, "the flags and -config given override them, field by field. kubectl edl explain does the same.")
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

// explainLive connects, reads the running controller's configuration from
// its Lease (the flags given override it), waits for the informers, plans
// once and returns the result for the jobs asked for. A configuration it
// cannot find is a warning on stderr: it plans with the defaults.
func explainLive(ctx context.Context, opts explainOptions, stderr io.Writer) (explain.Result, error) {
	logger, err := newLogger(opts.logLevel, stderr)
	if err != nil {
		return explain.Result{}, &usageError{err.Error()}
	}
	routeKlog(logger)
	cfg, err := clientConfig(opts.options)
	if err != nil {
		return explain.Result{}, &usageError{err.Error()}
	}
	if opts.job != "" && opts.namespace == "" {
		opts.namespace = kubeconfigNamespace(opts.kubeconfig)
	}
	if err := checkServer(ctx, cfg); err != nil {
		return explain.Result{}, err
	}
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return explain.Result{}, fmt.Errorf("create Kubernetes client: %w", err)
	}
	tjClient, err := tjclient.NewForConfig(cfg)
	if err != nil {
		return explain.Result{}, fmt.Errorf("create TrainingJob client: %w", err)
	}
	if err := checkNamespace(ctx, kubeClient, opts.namespace); err != nil {
		return explain.Result{}, err
	}
	res := explain.Result{}
	var warning string
	res.Configuration, res.Source, warning, err = explain.Configuration(ctx, kubeClient.CoordinationV1(), opts.leaderElectNS, opts.given)
	if err != nil {
		return explain.Result{}, err
	}
	if warning != "" {
		fmt.Fprintf(stderr, "edl explain: warning: %s\n", warning)
	}
	report, err := explain.Live(ctx, kubeClient, tjClient, res.Configuration, logger)
	if err != nil {
		return explain.Result{}, err
	}
	res.Report, err = explain.Filter(report, opts.namespace, opts.job)
	var notFound *explain.JobNotFoundError
	if errors.As(err, &notFound) {
		return explain.Result{}, &usageError{err.Error()}
	}
	return res, err
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
