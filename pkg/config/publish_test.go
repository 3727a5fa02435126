package config

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func lease(holder string, annotations map[string]string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "paddlecloud", Name: LeaseName, Annotations: annotations},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
}

func TestPublishedIsWhatWasPublished(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(lease("a_1", map[string]string{"keep": "me"}))
	c := Merge(Default(), &EDLConfiguration{Autoscaler: AutoscalerConfiguration{MaxLoadDesired: ptr(0.6)}})
	require.NoError(t, Publish(ctx, client.CoordinationV1(), "paddlecloud", "a_1", "v9", c))

	p, err := Published(ctx, client.CoordinationV1(), "paddlecloud")
	require.NoError(t, err)
	assert.Equal(t, c, p.Configuration)
	assert.Equal(t, "a_1", p.Leader)
	assert.Equal(t, "v9", p.Version)
	assert.True(t, p.Current())
	l, err := client.CoordinationV1().Leases("paddlecloud").Get(ctx, LeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "me", l.Annotations["keep"], "other annotations stay")
	assert.Equal(t, "a_1", *l.Spec.HolderIdentity, "the spec is the elector's")

	// Another replica took the Lease and has not published yet.
	l.Spec.HolderIdentity = ptr("b_2")
	_, err = client.CoordinationV1().Leases("paddlecloud").Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	p, err = Published(ctx, client.CoordinationV1(), "paddlecloud")
	require.NoError(t, err)
	assert.False(t, p.Current())
}

func TestPublishRetriesAConflict(t *testing.T) {
	client := fake.NewClientset(lease("a_1", nil))
	conflicts := 1
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, LeaseName, errors.New("renewed"))
		}
		return false, nil, nil
	})
	require.NoError(t, Publish(context.Background(), client.CoordinationV1(), "paddlecloud", "a_1", "v9", Default()))
	assert.Equal(t, 0, conflicts)
}

// TestPublishedSaysWhyThereIsNone: no Lease, no annotation, a garbled one,
// or no right to read it are each ErrNotPublished with a line saying so.
func TestPublishedSaysWhyThereIsNone(t *testing.T) {
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, LeaseName, errors.New("no"))
	})
	cases := map[string]struct {
		client *fake.Clientset
		want   string
	}{
		"no lease":      {fake.NewClientset(), "no Lease paddlecloud/edl-controller: no edl controller runs with leader election in namespace paddlecloud"},
		"no annotation": {fake.NewClientset(lease("old_1", nil)), `has no annotation edl.paddlepaddle.org/configuration: its holder "old_1" publishes no configuration`},
		"garbled": {fake.NewClientset(lease("a_1", map[string]string{AnnotationConfiguration: `{"apiVersion":"edl.paddlepaddle.org/v1alpha1","kind":"EDLConfiguration","nope":1}`})),
			`unknown field "nope"`},
		"forbidden": {forbidden, "not allowed to read the Lease paddlecloud/edl-controller"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Published(context.Background(), c.client.CoordinationV1(), "paddlecloud")
			require.ErrorIs(t, err, ErrNotPublished)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
