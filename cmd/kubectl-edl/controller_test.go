package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func lease(ns, name string) runtime.Object {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// TestFindControllerFollowsTheLease: without --controller-namespace the
// plugin finds the controller wherever an overlay installed it, falls back
// to the install's default when it may not look or finds none, and makes
// the user choose between two controllers.
func TestFindControllerFollowsTheLease(t *testing.T) {
	cases := []struct {
		name      string
		given     string
		leases    []runtime.Object
		forbidden bool
		want      string
		wantErr   string
	}{
		{name: "given", given: "mine", leases: []runtime.Object{lease("ml-system", "edl-controller")}, want: "mine"},
		{name: "moved", leases: []runtime.Object{lease("ml-system", "edl-controller"), lease("kube-system", "kube-scheduler")}, want: "ml-system"},
		{name: "none", leases: []runtime.Object{lease("kube-system", "kube-scheduler")}, want: "paddlecloud"},
		{name: "not allowed to list", leases: []runtime.Object{lease("ml-system", "edl-controller")}, forbidden: true, want: "paddlecloud"},
		{name: "two controllers", leases: []runtime.Object{lease("b", "edl-controller"), lease("a", "edl-controller")},
			wantErr: "Leases edl-controller in the namespaces a, b: name the controller's with --controller-namespace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client := fake.NewClientset(c.leases...)
			if c.forbidden {
				client.PrependReactor("list", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", nil)
				})
			}
			got, err := findController(t.Context(), client.CoordinationV1(), c.given)
			if c.wantErr != "" {
				require.ErrorIs(t, err, errUsage)
				assert.EqualError(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestVersionWarnsOnSkew: version gives the controller's published version
// and warns when it is not the plugin's, or when none can be read.
func TestVersionWarnsOnSkew(t *testing.T) {
	published := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ml-system", Name: "edl-controller",
		Annotations: map[string]string{
			"edl.paddlepaddle.org/configuration": `{"apiVersion":"edl.paddlepaddle.org/v1alpha1","kind":"EDLConfiguration"}`,
			"edl.paddlepaddle.org/leader":        "a", "edl.paddlepaddle.org/version": "v0.1.0",
		}}}
	client := fake.NewClientset(published)
	line, warning, err := controllerVersion(t.Context(), client.CoordinationV1(), "", "v0.1.0")
	require.NoError(t, err)
	assert.Equal(t, "controller   v0.1.0 (the Lease ml-system/edl-controller)", line)
	assert.Empty(t, warning)

	_, warning, err = controllerVersion(t.Context(), client.CoordinationV1(), "", "v0.2.0")
	require.NoError(t, err)
	assert.Equal(t, "the plugin is v0.2.0 and the controller v0.1.0: explain and queue may read what the controller writes differently; use the plugin of the controller's release", warning)

	line, warning, err = controllerVersion(t.Context(), fake.NewClientset().CoordinationV1(), "", "v0.1.0")
	require.NoError(t, err)
	assert.Equal(t, "controller   unknown", line)
	assert.Contains(t, warning, "no Lease paddlecloud/edl-controller")
}
