package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// newSuspendCommand is `kubectl edl suspend JOB...` (suspend true) or
// `kubectl edl resume JOB...`: a merge patch of each job's spec.suspend,
// as `kubectl patch` would write it.
func newSuspendCommand(r *root, suspend bool) *cobra.Command {
	use, short := "resume (JOB... | --all)", "Queue suspended TrainingJobs again (spec.suspend: false)"
	if suspend {
		use, short = "suspend (JOB... | --all)", "Stop TrainingJobs' pods, keeping the jobs (spec.suspend: true)"
	}
	var all bool
	var dryRun string
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		ValidArgsFunction: completeJobs(r, 0),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return usagef("name one job or more, or --all")
			}
			if len(args) > 0 && all {
				return usagef("jobs and --all: name jobs, or --all")
			}
			switch dryRun {
			case "none", "client", "server":
				return nil
			}
			return usagef(`invalid --dry-run %q: use "none", "client" or "server"`, dryRun)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ns, c, err := r.open(ctx, false)
			if err != nil {
				return err
			}
			return setSuspend(ctx, c.tj, ns, args, all, suspend, dryRun, r.streams.Out, r.streams.ErrOut)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every TrainingJob of the namespace")
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", `"client" prints what would change, "server" also has the API server check the patch; either changes nothing`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	return cmd
}

// setSuspend sets spec.suspend of the named jobs of ns, or of all of them,
// and prints one line a job: "suspended" or "resumed" when it changed,
// "unchanged" when it already was, with kubectl's "(dry run)" or "(server
// dry run)". A job that does not exist, or a patch that fails, does not
// stop the others; the errors are returned together at the end.
func setSuspend(ctx context.Context, c tjclient.Interface, ns string, names []string, all, suspend bool, dryRun string, out, errOut io.Writer) error {
	jobs := c.PaddlepaddleV1().TrainingJobs(ns)
	if all {
		list, err := jobs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list TrainingJobs in %s: %w", ns, err)
		}
		for _, j := range list.Items {
			names = append(names, j.Name)
		}
	}
	done := map[bool]string{true: "suspended", false: "resumed"}[suspend]
	suffix := map[string]string{"none": "", "client": " (dry run)", "server": " (server dry run)"}[dryRun]
	var errs []error
	for _, name := range names {
		job, err := jobs.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, usagef("TrainingJob %s/%s not found", ns, name))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("get TrainingJob %s/%s: %w", ns, name, err))
			continue
		}
		if job.Spec.Suspend == suspend {
			fmt.Fprintf(out, "trainingjob.paddlepaddle.org/%s unchanged%s\n", name, suffix)
			continue
		}
		if dryRun != "client" {
			opts := metav1.PatchOptions{FieldManager: "kubectl-edl"}
			if dryRun == "server" {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			// The resourceVersion makes the patch fail, rather than
			// overwrite, when the job changed since it was read.
			patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"suspend":%t}}`, job.ResourceVersion, suspend)
			if _, err := jobs.Patch(ctx, name, types.MergePatchType, patch, opts); err != nil {
				errs = append(errs, fmt.Errorf("patch TrainingJob %s/%s: %w", ns, name, err))
				continue
			}
		}
		fmt.Fprintf(out, "trainingjob.paddlepaddle.org/%s %s%s\n", name, done, suffix)
	}
	if all && len(names) == 0 {
		fmt.Fprintf(errOut, "No TrainingJobs in namespace %s.\n", ns)
	}
	return errors.Join(errs...)
}
