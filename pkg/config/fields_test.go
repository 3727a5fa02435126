package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// TestFieldsCoverTheType: the table has one row per leaf field of
// EDLConfiguration, each with a distinct flag, so that no field is left
// out of the flags, the merge or the published configuration.
func TestFieldsCoverTheType(t *testing.T) {
	var leaves []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				continue // TypeMeta
			}
			if f.Type.Kind() == reflect.Struct && f.Type.Name() != "Duration" {
				walk(prefix+name+".", f.Type)
				continue
			}
			leaves = append(leaves, prefix+name)
		}
	}
	walk("", reflect.TypeOf(EDLConfiguration{}))
	var paths []string
	flags := map[string]bool{}
	for _, f := range Fields {
		paths = append(paths, f.Path)
		assert.False(t, flags[f.Flag], "flag %s twice", f.Flag)
		flags[f.Flag] = true
		got, ok := FieldOfFlag(f.Flag)
		require.True(t, ok)
		assert.Equal(t, f.Path, got.Path)
	}
	assert.Equal(t, leaves, paths)
	assert.Empty(t, Missing(Default()), "Default sets every field")
	assert.Equal(t, planner.DefaultRebalanceGap, DefaultRebalanceGap)
	assert.Equal(t, float64(planner.DefaultMovesPerSecond), DefaultMaxMovesPerSecond)
	assert.Equal(t, planner.DefaultMaxLoadDesired, *Default().Autoscaler.MaxLoadDesired)
}

// TestEveryFieldRoundTrips: what Get writes, Set reads back, and the JSON
// of a configuration decodes to the same configuration.
func TestEveryFieldRoundTrips(t *testing.T) {
	d := Default()
	for _, f := range Fields {
		v, ok := f.Get(d)
		require.True(t, ok, f.Path)
		c := &EDLConfiguration{}
		require.NoError(t, f.Set(c, v), f.Path)
		back, ok := f.Get(c)
		require.True(t, ok)
		assert.Equal(t, v, back, f.Path)
	}
	data, err := json.Marshal(d)
	require.NoError(t, err)
	decoded, err := Decode(data)
	require.NoError(t, err)
	assert.Equal(t, d, decoded)
}

func TestMergeTakesTheOverlaysFields(t *testing.T) {
	overlay := &EDLConfiguration{Autoscaler: AutoscalerConfiguration{MaxLoadDesired: ptr(0.5), DryRun: ptr(true)}}
	m := Merge(Default(), overlay)
	assert.Equal(t, 0.5, *m.Autoscaler.MaxLoadDesired)
	assert.True(t, *m.Autoscaler.DryRun)
	assert.Equal(t, 5*time.Second, m.Autoscaler.Interval.Duration, "kept from the base")
	assert.Equal(t, 0.97, *Default().Autoscaler.MaxLoadDesired, "the base is not changed")
	assert.Equal(t, []any{"autoscaler.maxLoadDesired", "0.5", "autoscaler.dryRun", "true"}, KeyValues(overlay))
}

func TestPlanner(t *testing.T) {
	p := (&EDLConfiguration{Autoscaler: AutoscalerConfiguration{Interval: duration(2 * time.Second), CooldownCycles: ptr(90)}}).Planner()
	assert.Equal(t, 2*time.Second, p.Interval)
	assert.Equal(t, 180*time.Second, p.CoolDown)
	assert.Equal(t, 0.97, p.MaxLoadDesired)
	assert.True(t, p.GangAdmission)
	assert.True(t, p.Preemption)
	assert.Equal(t, []string{"nvidia.com/gpu"}, p.GPUResources)

	dry := (&EDLConfiguration{Autoscaler: AutoscalerConfiguration{DryRun: ptr(true)}}).Planner()
	assert.False(t, dry.GangAdmission, "a dry run admits nothing")
	assert.False(t, dry.Preemption, "a dry run preempts nothing")

	off := (&EDLConfiguration{Autoscaler: AutoscalerConfiguration{Preemption: ptr(false)}}).Planner()
	assert.True(t, off.GangAdmission)
	assert.False(t, off.Preemption)
	noGang := (&EDLConfiguration{Autoscaler: AutoscalerConfiguration{GangAdmission: ptr(false)}}).Planner()
	assert.False(t, noGang.Preemption, "preemption requeues through gang admission")
}
