package live

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/test/trace"
)

// TestLivePageIsTheRecord: the live replay's table in
// docs/experiments-trace.md is the committed
// docs/experiments/trace-live/summary.csv, and in the record each policy's
// live average JCT is within 10% of the simulator's.
func TestLivePageIsTheRecord(t *testing.T) {
	docs := filepath.Join("..", "..", "..", "docs")
	page, err := os.ReadFile(filepath.Join(docs, "experiments-trace.md"))
	require.NoError(t, err)
	f, err := os.Open(filepath.Join(docs, "experiments", "trace-live", "summary.csv"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, trace.SummaryHeader, rows[0])
	byPolicy := map[string][]float64{}
	for _, r := range rows[1:] {
		var v []float64
		for _, col := range []int{2, 4, 7} { // avg, p99, resizes a job-hour
			x, err := strconv.ParseFloat(r[col], 64)
			require.NoError(t, err, "%v", r)
			v = append(v, x)
		}
		byPolicy[r[1]] = v
	}
	for _, p := range []string{"fulfillment", "goodput"} {
		l, s := byPolicy[p+"/live"], byPolicy[p+"/simulated"]
		require.NotNil(t, l, p)
		require.NotNil(t, s, p)
		row := fmt.Sprintf("| %s | %.0f | %.0f | %+.1f%% | %.0f | %.0f | %.2f | %.2f |", p, l[0], s[0], 100*(l[0]/s[0]-1), l[1], s[1], l[2], s[2])
		assert.Contains(t, string(page), row, "the live replay under %s", p)
		assert.InEpsilon(t, s[0], l[0], 0.10, "%s: the recorded live average JCT within 10%% of the simulator's", p)
	}
	comparison, err := os.ReadFile(filepath.Join(docs, "experiments", "trace-live", "comparison.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(comparison), "under goodput: average JCT live")
}
