package progress

import (
	"fmt"
	"strings"
	"time"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Explanation is what kubectl edl explain shows of a job's progress.
type Explanation struct {
	// Reports: the training reports its progress; false for a job that
	// reports nothing, which is modelled as gaining equally from every
	// trainer.
	Reports bool `json:"reports"`
	// Unit, Done, Total, Percent and ETA are the last report's.
	Unit    string `json:"unit,omitempty"`
	Done    int64  `json:"done,omitempty"`
	Total   int64  `json:"total,omitempty"`
	Percent *int32 `json:"percent,omitempty"`
	ETA     string `json:"eta,omitempty"`
	// Measured is the throughput at each size the job ran at.
	Measured []SizeExplanation `json:"measured,omitempty"`
	// Predicted is the model's throughput one trainer down, at the job's
	// size and one up.
	Predicted []SizeExplanation `json:"predicted,omitempty"`
	// FitError is the model's root mean square relative error on the
	// measurements, in percent; nil without a model.
	FitError *float64 `json:"fitError,omitempty"`
	// RestartCost is the last restart's measured cost.
	RestartCost string `json:"restartCost,omitempty"`
	// Error is why the last report was refused.
	Error string `json:"error,omitempty"`
}

// SizeExplanation is a job's throughput at one size.
type SizeExplanation struct {
	Trainers   int32   `json:"trainers"`
	Nodes      int32   `json:"nodes"`
	Throughput float64 `json:"throughput"`
	Speedup    float64 `json:"speedup"`
	Basis      Basis   `json:"basis"`
	// Seconds is the time measured there (Measured only).
	Seconds float64 `json:"seconds,omitempty"`
}

// Explain explains s, the progress of a job asking for trainers.
func Explain(s *v1.ProgressStatus, trainers int32) Explanation {
	if s == nil {
		return Explanation{}
	}
	e := Explanation{Reports: true, Unit: s.Unit, Done: s.Done, Total: s.Total, Percent: s.Percent, ETA: s.ETA, Error: s.Error}
	for _, m := range s.Measured {
		thr := float64(m.Work) * 1000 / float64(max(m.Millis, 1))
		sp, _ := Speedup(s, m.Trainers, m.Nodes)
		e.Measured = append(e.Measured, SizeExplanation{Trainers: m.Trainers, Nodes: m.Nodes, Throughput: thr,
			Speedup: sp, Basis: Measured, Seconds: float64(m.Millis) / 1000})
	}
	if model := Model(s); model.Measured() {
		fit := model.FitError * 100
		e.FitError = &fit
		for n := max(trainers-1, 1); n <= trainers+1; n++ {
			nodes := min(max(s.Nodes, 1), n)
			thr, basis := throughput(s, n, nodes)
			sp, _ := Speedup(s, n, nodes)
			if basis == Measured { // the model's figure, not the measurement's
				batch, perStep := batches(s)
				thr = model.Predict(int(n), int(nodes), batch).Throughput * perStep / batch
				basis = "fitted"
			}
			e.Predicted = append(e.Predicted, SizeExplanation{Trainers: n, Nodes: nodes, Throughput: thr, Speedup: sp, Basis: basis})
		}
	}
	if s.RestartCost != nil {
		e.RestartCost = s.RestartCost.Duration.String()
	}
	return e
}

// Text is the explanation as explain's lines, each indented and ending
// in a newline.
func (e Explanation) Text() string {
	var b strings.Builder
	if !e.Reports {
		b.WriteString("  progress     not reported: every trainer is taken to help equally\n")
		return b.String()
	}
	done := fmt.Sprintf("%d %s", e.Done, e.Unit)
	if e.Total > 0 && e.Percent != nil {
		done = fmt.Sprintf("%d%% (%d of %d %s)", *e.Percent, e.Done, e.Total, e.Unit)
	}
	if e.ETA != "" {
		done += ", ETA " + e.ETA
	}
	fmt.Fprintf(&b, "  progress     %s\n", done)
	if e.Error != "" {
		fmt.Fprintf(&b, "  last report  refused: %s\n", e.Error)
	}
	for _, m := range e.Measured {
		fmt.Fprintf(&b, "  measured     %d trainers on %d nodes: %s %s (%.2f×), over %s\n", m.Trainers, m.Nodes,
			Rate(m.Throughput), e.Unit, m.Speedup, time.Duration(m.Seconds*float64(time.Second)).Round(time.Second))
	}
	for _, p := range e.Predicted {
		fmt.Fprintf(&b, "  predicted    %d trainers: %s %s (%.2f×, %s)\n", p.Trainers, Rate(p.Throughput), e.Unit, p.Speedup, p.Basis)
	}
	if e.FitError != nil {
		fmt.Fprintf(&b, "  model        fits the measurements within %.1f%% (root mean square)\n", *e.FitError)
	}
	if e.RestartCost != "" {
		fmt.Fprintf(&b, "  restart      the last cost %s\n", e.RestartCost)
	}
	return b.String()
}
