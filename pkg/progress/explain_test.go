package progress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExplainShowsMeasuredPredictedAndTheFit: a job measured at 1 and 2
// trainers is shown at each, predicted one down, at its size and one up,
// with the fit's error and the restart's cost.
func TestExplainShowsMeasuredPredictedAndTheFit(t *testing.T) {
	s := Advance(nil, report(0, 0, "a"), Size{Trainers: 1, Nodes: 1, Desired: 1})
	s = Advance(s, report(1000, 10*time.Second, "a"), Size{Trainers: 1, Nodes: 1, Desired: 1})
	s = Advance(s, report(2000, 20*time.Second, "a"), Size{Trainers: 1, Nodes: 1, Desired: 1})
	s = Advance(s, report(2000, 50*time.Second, "b"), Size{Trainers: 2, Nodes: 1, Desired: 2})
	s = Advance(s, report(3800, 60*time.Second, "b"), Size{Trainers: 2, Nodes: 1, Desired: 2})
	s = Advance(s, report(5600, 70*time.Second, "b"), Size{Trainers: 2, Nodes: 1, Desired: 2})
	e := Explain(s, 2)
	require.Len(t, e.Measured, 2)
	assert.InDelta(t, 100, e.Measured[0].Throughput, 1e-9)
	assert.InDelta(t, 180, e.Measured[1].Throughput, 1e-9)
	require.Len(t, e.Predicted, 3)
	assert.Equal(t, []int32{1, 2, 3}, []int32{e.Predicted[0].Trainers, e.Predicted[1].Trainers, e.Predicted[2].Trainers})
	assert.Equal(t, Basis("optimistic"), e.Predicted[2].Basis)
	assert.InEpsilon(t, 180, e.Predicted[1].Throughput, 0.05, "the model reproduces what it was fitted on")
	assert.InEpsilon(t, 270, e.Predicted[2].Throughput, 0.05, "perfect scaling from the largest size measured")
	require.NotNil(t, e.FitError)
	text := e.Text()
	assert.Contains(t, text, "  progress     0% (5600 of 1000000 samples), ETA ")
	assert.Contains(t, text, "  measured     2 trainers on 1 nodes: 180/s samples (1.80×), over 10s\n")
	assert.Contains(t, text, "  predicted    3 trainers: ")
	assert.Contains(t, text, "  restart      the last cost 30s\n")

	none := Explain(nil, 3)
	assert.False(t, none.Reports)
	assert.Equal(t, "  progress     not reported: every trainer is taken to help equally\n", none.Text())
}
