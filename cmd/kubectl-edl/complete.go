package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completeJobs completes the names of the TrainingJobs of the namespace
// (-n, else the context's) that the command line does not name yet; at
// most max names in all (0: no limit).
func completeJobs(r *root, max int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cmd.Context()
		ns, err := r.namespace(false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		c, err := r.connect(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list, err := c.tj.PaddlepaddleV1().TrainingJobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []cobra.Completion
		for _, j := range list.Items {
			if strings.HasPrefix(j.Name, toComplete) && !slices.Contains(args, j.Name) {
				names = append(names, j.Name)
			}
		}
		slices.Sort(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
