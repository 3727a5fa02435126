package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/paddlepaddle/edl/pkg/config"
)

// newVersionCommand is `kubectl edl version`: the plugin's version and the
// running controller's, as its leader published it on the Lease, with a
// warning when they differ.
func newVersionCommand(r *root) *cobra.Command {
	var client bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "The plugin's version and the running controller's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(r.streams.Out, "kubectl-edl  %s\n", version)
			if client {
				return nil
			}
			c, err := r.connect(cmd.Context())
			if err != nil {
				return err
			}
			line, warning, err := controllerVersion(cmd.Context(), c.kube.CoordinationV1(), r.controllerNamespace, version)
			if err != nil {
				return err
			}
			fmt.Fprintln(r.streams.Out, line)
			if warning != "" {
				fmt.Fprintf(r.streams.ErrOut, "kubectl edl: warning: %s\n", warning)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&client, "client", false, "the plugin's version only, without asking the cluster")
	return cmd
}

// controllerVersion is the line that gives the version of the controller
// whose Lease is in namespace given (or found as findController does), and
// a warning when it is not plugin's or cannot be read.
func controllerVersion(ctx context.Context, leases coordinationv1.LeasesGetter, given, plugin string) (line, warning string, err error) {
	ns, err := findController(ctx, leases, given)
	if err != nil {
		return "", "", err
	}
	p, err := config.Published(ctx, leases, ns)
	switch {
	case errors.Is(err, config.ErrNotPublished):
		return "controller   unknown", err.Error(), nil
	case err != nil:
		return "", "", err
	}
	line = fmt.Sprintf("controller   %s (the Lease %s)", p.Version, p.Lease)
	if p.Version != plugin {
		warning = fmt.Sprintf("the plugin is %s and the controller %s: explain and queue may read what the controller writes differently; use the plugin of the controller's release", plugin, p.Version)
	}
	return line, warning, nil
}
