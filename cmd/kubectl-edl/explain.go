package main

import (
	"errors"
	"fmt"
	"io"

	log "github.com/inconshreveable/log15"
	"github.com/spf13/cobra"

	"github.com/paddlepaddle/edl/pkg/explain"
)

func newExplainCommand(r *root) *cobra.Command {
	var all, published bool
	var output string
	cmd := &cobra.Command{
		Use:               "explain [JOB]",
		ValidArgsFunction: completeJobs(r, 1),
		Short:             "Why each TrainingJob has the trainers it has",
		Long: `Plans once on the live cluster, as the controller's next cycle would, changes nothing, and
prints for each TrainingJob what the next cycle would do and what limits it. It plans with the
options the running controller published on its Lease (--controller-namespace, else found by
name), and says so when it cannot find them. The jobs of the current namespace, or -n, or -A; or one JOB.

Planning live reads the whole cluster (nodes, pods, quotas, ReplicaSets, PriorityClasses and
TrainingJobs of every namespace). A user who may not, such as a namespace's editor, gets what
the controller last wrote in each job's status instead — what limits its trainers, its place in
the queue, its last scaling — and a line saying which right planning live needs; --published
asks for that at once.`,
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
			job := ""
			if len(args) == 1 {
				job = args[0]
			}
			why := ""
			if !published {
				if why, err = explain.CannotPlanLive(ctx, c.kube.AuthorizationV1()); err != nil {
					return err
				}
			}
			if published || why != "" {
				return explainPublished(r, c, ns, job, why, output, cmd)
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
			res.Report, err = explain.Filter(report, ns, job)
			return printExplained(r, res, err, output, ns, explain.Print)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the jobs of every namespace")
	cmd.Flags().BoolVar(&published, "published", false, "explain from what the controller last wrote in the jobs' status, without planning live (what a user who may read only the jobs gets)")
	outputFlag(cmd, &output)
	return cmd
}

// explainPublished explains the jobs from their status; why, when not "",
// is the right planning live needs and the user does not have.
func explainPublished(r *root, c *clients, ns, job, why, output string, cmd *cobra.Command) error {
	res, err := explain.Published(cmd.Context(), c.tj, ns, job, why)
	return printExplained(r, res, err, output, ns, explain.PrintPublished)
}

// printExplained prints res, live or published, unless err says why there
// is none: a job that does not exist is a usage error naming it.
func printExplained[R any](r *root, res R, err error, output, ns string, print func(io.Writer, R, string, string) error) error {
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
	return print(r.streams.Out, res, output, ns)
}
