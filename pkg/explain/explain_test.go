package explain

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/paddlepaddle/edl/pkg/config"
)

// TestConfigurationIsTheControllersWithTheGivenOverIt: the published
// configuration is planned with, the fields given override it; without a
// publication the defaults are, with a warning that says why; a Lease taken
// over by a replica that has not published yet is a warning too.
func TestConfigurationIsTheControllersWithTheGivenOverIt(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "paddlecloud", Name: config.LeaseName},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-a_1")},
	})
	published := config.Merge(config.Default(), &config.EDLConfiguration{Autoscaler: config.AutoscalerConfiguration{
		MaxLoadDesired: ptr.To(0.6), CooldownCycles: ptr.To(40)}})
	require.NoError(t, config.Publish(ctx, client.CoordinationV1(), "paddlecloud", "pod-a_1", "v1.2", published))

	cfg, source, warning, err := Configuration(ctx, client.CoordinationV1(), "paddlecloud", &config.EDLConfiguration{})
	require.NoError(t, err)
	assert.Equal(t, published, cfg)
	assert.Equal(t, "the Lease paddlecloud/edl-controller, published by pod-a_1 (edl v1.2)", source)
	assert.Empty(t, warning)

	given := &config.EDLConfiguration{Autoscaler: config.AutoscalerConfiguration{CooldownCycles: ptr.To(1)}}
	cfg, source, _, err = Configuration(ctx, client.CoordinationV1(), "paddlecloud", given)
	require.NoError(t, err)
	assert.Equal(t, 1, *cfg.Autoscaler.CooldownCycles, "given")
	assert.Equal(t, 0.6, *cfg.Autoscaler.MaxLoadDesired, "published")
	assert.Contains(t, source, "with the options given over it")

	lease, err := client.CoordinationV1().Leases("paddlecloud").Get(ctx, config.LeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	lease.Spec.HolderIdentity = ptr.To("pod-b_2")
	_, err = client.CoordinationV1().Leases("paddlecloud").Update(ctx, lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, _, warning, err = Configuration(ctx, client.CoordinationV1(), "paddlecloud", nil)
	require.NoError(t, err)
	assert.Contains(t, warning, `held by "pod-b_2", which has not published its configuration yet`)

	cfg, source, warning, err = Configuration(ctx, client.CoordinationV1(), "elsewhere", given)
	require.NoError(t, err)
	assert.Equal(t, "the defaults, with the options given over them", source)
	assert.Equal(t, "no Lease elsewhere/edl-controller: no edl controller runs with leader election in namespace elsewhere; planning with the default options", warning)
	assert.Equal(t, 1, *cfg.Autoscaler.CooldownCycles)
	assert.Equal(t, 0.97, *cfg.Autoscaler.MaxLoadDesired)
}
