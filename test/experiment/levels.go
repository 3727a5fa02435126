package experiment

import (
	"fmt"
	"strings"
)

// Level is the means of one level of the web service, over the samples of
// the window at that level.
type Level struct {
	// Web is the level's desired web pods; Up says it was reached by an
	// up-step, so web pods were placed beside EDL's trainers.
	Web     int
	Up      bool
	Samples int
	// The means of the utilization (of the CPU pool in Pools) and of the
	// bounds.
	Utilization, Ideal, Fixed, Around, Trainers float64
}

// Levels splits the window's samples of a Shared or Pools run by the web
// service's level, in order, and averages each; in Pools it takes the CPU
// pool's figures.
func Levels(r *Result) []Level {
	var out []Level
	prev := 0
	for _, s := range r.Samples {
		if s.At < r.WindowStart {
			prev = s.WebDesired
			continue
		}
		util, ideal, fixed, around, trainers := s.Utilization, s.Ideal, s.IdealFixed, s.IdealAround, s.IdealTrainers
		for _, p := range s.Pools {
			if p.Name == CPUPool {
				util, ideal, fixed, around, trainers = p.Utilization(), p.Ideal, p.IdealFixed, p.IdealAround, p.IdealTrainers
			}
		}
		if len(out) == 0 || s.WebDesired != out[len(out)-1].Web {
			out = append(out, Level{Web: s.WebDesired, Up: len(out) > 0 && s.WebDesired > prev})
		}
		prev = s.WebDesired
		l := &out[len(out)-1]
		l.Samples++
		l.Utilization += util
		l.Ideal += ideal
		l.Fixed += fixed
		l.Around += around
		l.Trainers += trainers
	}
	for i := range out {
		n := float64(out[i].Samples)
		out[i].Utilization /= n
		out[i].Ideal /= n
		out[i].Fixed /= n
		out[i].Around /= n
		out[i].Trainers /= n
	}
	return out
}

// LevelTable renders a run's levels as a Markdown table, one column per
// level.
func LevelTable(r *Result) string {
	levels := Levels(r)
	var b strings.Builder
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	fmt.Fprintf(&b, "| %s, %s, by level |", r.Scenario, r.Variant.Label())
	for i, l := range levels {
		fmt.Fprintf(&b, " %d: %d web pods |", i+1, l.Web)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(levels)))
	b.WriteString("\n")
	for _, row := range []struct {
		name string
		f    func(Level) float64
	}{
		{"mean utilization", func(l Level) float64 { return l.Utilization }},
		{"ideal bound", func(l Level) float64 { return l.Ideal }},
		{LevelFixedRow, func(l Level) float64 { return l.Fixed }},
		{"with the web pods where kube-scheduler put them", func(l Level) float64 { return l.Around }},
		{"bound of the trainers", func(l Level) float64 { return l.Trainers }},
	} {
		fmt.Fprintf(&b, "| %s |", row.name)
		for _, l := range levels {
			fmt.Fprintf(&b, " %s |", pct(row.f(l)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// LevelFixedRow names the bound of what EDL cannot influence in a table by
// level.
const LevelFixedRow = "bound of what EDL cannot influence"
