package main

import (
	"errors"
	"fmt"

	log "github.com/inconshreveable/log15"
	"github.com/spf13/cobra"

	"github.com/paddlepaddle/edl/pkg/explain"
)

func newExplainCommand(r *root) *cobra.Command {
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:               "explain [JOB]",
		ValidArgsFunction: completeJobs(r, 1),
		Short:             "Why each TrainingJob has the trainers it has",
		Long: `Plans once on the live cluster, as the controller's next cycle would, changes nothing, and
prints for each TrainingJob what the next cycle would do and what limits it. It plans with the
options the running controller published on its Lease (--controller-namespace, else found by
name), and says so when it cannot find them. The jobs of the current namespace, or -n, or -A; or one JOB.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("unexpected argument %q: name at most one job", args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if all && len(args) == 1 {
				return usagef("a JOB and -A: name a job in one namespace (-n), or none")
			}
			ctx := cmd.Context()
			ns, c, err := r.open(ctx, all)
			if err != nil {
				return err
			}
			res := explain.Result{}
			var warning string
			controllerNS, err := findController(ctx, c.kube.CoordinationV1(), r.controllerNamespace)
			if err != nil {
				return err
			}
			res.Configuration, res.Source, warning, err = explain.Configuration(ctx, c.kube.CoordinationV1(), controllerNS, nil)
			if err != nil {
				return err
			}
			if warning != "" {
				fmt.Fprintf(r.streams.ErrOut, "kubectl edl: warning: %s\n", warning)
			}
			logger := log.New()
			logger.SetHandler(log.DiscardHandler())
			report, err := explain.Live(ctx, c.kube, c.tj, res.Configuration, logger)
			if err != nil {
				return err
			}
			job := ""
			if len(args) == 1 {
				job = args[0]
			}
			res.Report, err = explain.Filter(report, ns, job)
			var notFound *explain.JobNotFoundError
			if errors.As(err, &notFound) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			if done, err := printTemplated(r.streams.Out, output, res); done {
				return err
			}
			return explain.Print(r.streams.Out, res, output, ns)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the jobs of every namespace")
	outputFlag(cmd, &output)
	return cmd
}
