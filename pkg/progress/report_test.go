package progress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	good := map[string]string{"done": "8192", "total": "81920", "unit": "samples", "batch": "8192",
		"trainers": "2", "noiseScale": "1500.5", "time": "1765000000.25", "run": "pod-a/42"}
	r, ok, err := Parse(good)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(8192), r.Done)
	assert.Equal(t, int64(81920), r.Total)
	assert.Equal(t, int64(8192), r.Batch)
	assert.Equal(t, int32(2), r.Trainers)
	assert.Equal(t, "pod-a/42", r.Run)
	assert.Equal(t, time.Unix(1765000000, 250_000_000).UTC(), r.Time)
	assert.InDelta(t, 1500.5, r.NoiseScale.AsApproximateFloat64(), 1e-9)

	_, ok, err = Parse(map[string]string{})
	assert.NoError(t, err)
	assert.False(t, ok, "a ConfigMap the training has not written holds no report")

	r, ok, err = Parse(map[string]string{"done": "3", "time": "1765000000"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, UnitSamples, r.Unit, "samples by default")
	assert.Nil(t, r.NoiseScale)

	for name, tc := range map[string]struct {
		data map[string]string
		key  string
	}{
		"done not a number":   {map[string]string{"done": "12.5", "time": "1"}, "done"},
		"done negative":       {map[string]string{"done": "-1", "time": "1"}, "done"},
		"done empty":          {map[string]string{"done": "", "time": "1"}, "done"},
		"total not a number":  {map[string]string{"done": "1", "total": "lots", "time": "1"}, "total"},
		"unit unknown":        {map[string]string{"done": "1", "unit": "epochs", "time": "1"}, "unit"},
		"batch negative":      {map[string]string{"done": "1", "batch": "-8", "time": "1"}, "batch"},
		"trainers too large":  {map[string]string{"done": "1", "trainers": "4294967296", "time": "1"}, "trainers"},
		"time missing":        {map[string]string{"done": "1"}, "time"},
		"time not a number":   {map[string]string{"done": "1", "time": "now"}, "time"},
		"noise scale below 0": {map[string]string{"done": "1", "time": "1", "noiseScale": "-2"}, "noiseScale"},
		"run too long":        {map[string]string{"done": "1", "time": "1", "run": string(make([]byte, 129))}, "run"},
	} {
		t.Run(name, func(t *testing.T) {
			_, ok, err := Parse(tc.data)
			require.Error(t, err)
			assert.False(t, ok)
			assert.Contains(t, err.Error(), "progress key "+tc.key+" ")
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}
