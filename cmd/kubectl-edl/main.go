// Command kubectl-edl is EDL's kubectl plugin: once it is on the PATH,
// `kubectl edl explain`, `kubectl edl queue`, `kubectl edl suspend` and
// `kubectl edl resume` work with the kubeconfig's current context and
// namespace and kubectl's own flags (-n, -A, --context, -o). explain plans
// with the options the running controller published on its Lease, so that
// nobody repeats the controller's flags. `kubectl edl convert` turns
// Kubeflow PyTorchJobs into TrainingJobs, without a cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	// The auth providers kubectl itself links (OIDC), so that every
	// kubeconfig kubectl reads works here too; exec credential plugins
	// are client-go's own.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/klog/v2"

	"github.com/paddlepaddle/edl/pkg/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(commandLine(os.Args[0], os.Args[1:]), genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}

// completerName is the name under which kubectl (v1.26 and newer) runs a
// plugin's completion: `kubectl edl <TAB>` runs kubectl_complete-edl with
// the words after "edl". The same binary, installed under that name too,
// answers as cobra's __complete.
const completerName = "kubectl_complete-edl"

// commandLine is the arguments to run: args, or cobra's __complete of
// them when the binary runs as completerName.
func commandLine(argv0 string, args []string) []string {
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") == completerName {
		return append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	return args
}

// run is main without os.Exit: 0, 1 for a failure, 2 for a mistake in the
// command line or a job or namespace that does not exist. Every error is
// one line.
func run(args []string, streams genericiooptions.IOStreams) int {
	// client-go's own logs would interleave with the output; what goes
	// wrong reaches the user as the command's error.
	klog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd := newRootCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(streams.ErrOut, "kubectl edl: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		// cobra's own "unknown command" is a mistake in the command line too.
		if errors.Is(err, errUsage) || strings.HasPrefix(err.Error(), "unknown command") {
			return 2
		}
		return 1
	}
	return 0
}

// root holds what every command shares: kubectl's connection flags and the
// namespace of the controller's Lease.
type root struct {
	flags               *genericclioptions.ConfigFlags
	controllerNamespace string
	streams             genericiooptions.IOStreams
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	r := &root{flags: genericclioptions.NewConfigFlags(true), streams: streams}
	cmd := &cobra.Command{
		// The binary's name, so that the completion scripts cobra writes
		// complete kubectl-edl and never replace kubectl's own; help shows
		// the display name.
		Use:         "kubectl-edl",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl edl"},
		Short:       "Elastic Deep Learning: why jobs have the trainers they have, the admission queue, suspend and resume, Kubeflow PyTorchJobs converted",
		Long: `kubectl edl works with EDL's TrainingJobs on the cluster of the kubeconfig's current context.

  kubectl edl explain [JOB]     why each job has its trainers: one plan, as the controller's next
                                cycle would make it, with the options the controller runs with
  kubectl edl queue             the jobs waiting for admission, in queue order, and what each waits for
  kubectl edl suspend JOB...    stop jobs' pods, keeping the jobs (spec.suspend: true)
  kubectl edl resume JOB...     queue them again (spec.suspend: false)
  kubectl edl convert -f FILE   turn Kubeflow PyTorchJobs into TrainingJobs (YAML on stdout)
  kubectl edl version           the plugin's version and the running controller's`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	r.flags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&r.controllerNamespace, "controller-namespace", "",
		"namespace of the EDL controller's Lease, where it publishes the options it runs with (default: the namespace of the one Lease "+
			config.LeaseName+" in the cluster when you may list Leases everywhere, else "+defaultControllerNamespace+")")
	cmd.AddCommand(newExplainCommand(r), newQueueCommand(r), newSuspendCommand(r, true), newSuspendCommand(r, false),
		newConvertCommand(r), newVersionCommand(r))
	return cmd
}

// errUsage marks a mistake of the user's, which exits 2.
var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }
