package main

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/paddlepaddle/edl/pkg/config"
)

// defaultControllerNamespace is where edl_controller.yaml installs the
// controller, the namespace looked in when no other is found.
const defaultControllerNamespace = "paddlecloud"

// findController returns the namespace of the controller's Lease: given,
// when --controller-namespace names one; else the namespace of the one
// Lease named config.LeaseName in the cluster, when the user may list
// Leases in every namespace; else defaultControllerNamespace. Two Leases of
// that name are two controllers, and the user must choose.
func findController(ctx context.Context, leases coordinationv1.LeasesGetter, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	list, err := leases.Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", config.LeaseName).String(),
	})
	if err != nil {
		// Not allowed to list Leases everywhere, as most tenants are not:
		// the install's default, which explain's warning names when it
		// finds nothing there.
		return defaultControllerNamespace, nil
	}
	var found []string
	for _, l := range list.Items {
		if l.Name == config.LeaseName {
			found = append(found, l.Namespace)
		}
	}
	slices.Sort(found)
	switch len(found) {
	case 0:
		return defaultControllerNamespace, nil
	case 1:
		return found[0], nil
	}
	return "", usagef("Leases %s in the namespaces %s: name the controller's with --controller-namespace", config.LeaseName, strings.Join(found, ", "))
}
