package main

import (
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// newSuspendCommand is `kubectl edl suspend JOB` (suspend true) or
// `kubectl edl resume JOB`: a merge patch of the job's spec.suspend, as
// `kubectl patch` would write it.
func newSuspendCommand(r *root, suspend bool) *cobra.Command {
	use, short, done := "resume JOB", "Queue a suspended TrainingJob again (spec.suspend: false)", "resumed"
	if suspend {
		use, short, done = "suspend JOB", "Stop a TrainingJob's pods, keeping the job (spec.suspend: true)", "suspended"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("name one job")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ns, c, err := r.open(ctx, false)
			if err != nil {
				return err
			}
			patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
			_, err = c.tj.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, args[0], types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edl"})
			switch {
			case apierrors.IsNotFound(err):
				return usagef("TrainingJob %s/%s not found", ns, args[0])
			case err != nil:
				return fmt.Errorf("patch TrainingJob %s/%s: %w", ns, args[0], err)
			}
			_, err = fmt.Fprintf(r.streams.Out, "trainingjob.paddlepaddle.org/%s %s\n", args[0], done)
			return err
		},
	}
}
