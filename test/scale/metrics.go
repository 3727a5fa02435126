package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Histogram is a Prometheus histogram's cumulative buckets.
type Histogram struct {
	// Bounds are the buckets' upper bounds, ascending, +Inf last.
	Bounds []float64
	// Counts are the cumulative counts of the buckets.
	Counts []uint64
	Count  uint64
	Sum    float64
}

// histogramJSON is a Histogram in JSON, its bounds as strings: JSON has no
// +Inf.
type histogramJSON struct {
	Bounds []string
	Counts []uint64
	Count  uint64
	Sum    float64
}

// MarshalJSON writes the bounds as strings ("+Inf" last).
func (h Histogram) MarshalJSON() ([]byte, error) {
	out := histogramJSON{Counts: h.Counts, Count: h.Count, Sum: h.Sum}
	for _, b := range h.Bounds {
		out.Bounds = append(out.Bounds, strconv.FormatFloat(b, 'g', -1, 64))
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var in histogramJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*h = Histogram{Counts: in.Counts, Count: in.Count, Sum: in.Sum}
	for _, s := range in.Bounds {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("histogram bound %q: %w", s, err)
		}
		h.Bounds = append(h.Bounds, f)
	}
	return nil
}

// ParseHistogram reads the histogram name from a /metrics page in the text
// exposition format.
func ParseHistogram(r io.Reader, name string) (Histogram, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Histogram{}, fmt.Errorf("parse metrics: %w", err)
	}
	family, ok := families[name]
	if !ok || len(family.GetMetric()) == 0 {
		return Histogram{}, fmt.Errorf("metrics: no %s", name)
	}
	if family.GetType() != dto.MetricType_HISTOGRAM {
		return Histogram{}, fmt.Errorf("metrics: %s is a %s, want a histogram", name, family.GetType())
	}
	h := family.GetMetric()[0].GetHistogram()
	out := Histogram{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
	for _, b := range h.GetBucket() {
		out.Bounds = append(out.Bounds, b.GetUpperBound())
		out.Counts = append(out.Counts, b.GetCumulativeCount())
	}
	if len(out.Bounds) == 0 || !math.IsInf(out.Bounds[len(out.Bounds)-1], 1) {
		out.Bounds = append(out.Bounds, math.Inf(1))
		out.Counts = append(out.Counts, out.Count)
	}
	return out, nil
}

// Quantile estimates the q-quantile as PromQL's histogram_quantile does: by
// linear interpolation inside the bucket that holds it, the first bucket
// starting at 0; a quantile in the +Inf bucket is the last finite bound.
// It is NaN for an empty histogram.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * float64(h.Count)
	for i, c := range h.Counts {
		if float64(c) < rank {
			continue
		}
		if math.IsInf(h.Bounds[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.Bounds[i-1]
		}
		lower, below := 0.0, uint64(0)
		if i > 0 {
			lower, below = h.Bounds[i-1], h.Counts[i-1]
		}
		inBucket := float64(c - below)
		if inBucket == 0 {
			return h.Bounds[i]
		}
		return lower + (h.Bounds[i]-lower)*(rank-float64(below))/inBucket
	}
	return h.Bounds[len(h.Bounds)-1]
}

// Mean is the histogram's mean observation, NaN when it is empty.
func (h Histogram) Mean() float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	return h.Sum / float64(h.Count)
}
