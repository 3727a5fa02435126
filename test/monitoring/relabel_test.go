package monitoring

import (
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/metrics"
)

// targetLabels are the labels Prometheus puts on every series it scrapes
// from the controller's pods through a ServiceMonitor (the Kubernetes
// service discovery's endpoints role): the target's, not edl's.
var targetLabels = []string{"job", "namespace", "service", "pod", "container", "endpoint", "instance"}

// replicaLabels are the target labels a query may use on purpose: they
// tell the controller's replicas apart.
var replicaLabels = []string{"pod", "instance"}

// relabel returns the label names of a series edl exposes with labels
// own, as Prometheus stores it with honor_labels: false, its default and
// the ServiceMonitor's: an exposed label that a target label also names is
// kept as exported_<name>, and the target's value takes its place.
func relabel(own []string) []string {
	out := slices.Clone(own)
	for i, l := range out {
		if slices.Contains(targetLabels, l) {
			out[i] = model.ExportedLabelPrefix + l
		}
	}
	return append(out, targetLabels...)
}

// edlLabels are the labels of each of edl's series that still carry edl's
// values once Prometheus has stored it, and the replica's: what a query may
// select and group by. For a histogram's _bucket series, "le" too.
func edlLabels(known map[string][]string, name string) ([]string, bool) {
	if own, ok := known[name]; ok {
		return survivors(own), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if own, ok := known[base]; ok {
				if suffix == "_bucket" {
					own = append(slices.Clone(own), model.BucketLabel)
				}
				return survivors(own), true
			}
		}
	}
	return nil, false
}

func survivors(own []string) []string {
	kept := slices.Clone(replicaLabels)
	for _, l := range relabel(own) {
		if slices.Contains(own, l) && !slices.Contains(targetLabels, l) {
			kept = append(kept, l)
		}
	}
	return kept
}

// labelProblems lists every label expr selects or groups edl's series by
// that is not edl's once Prometheus has stored them: a per-job query on
// "namespace" or "job" would get the controller's pod's, one series for
// every job.
func labelProblems(known map[string][]string, expr string) []string {
	node, err := promql.ParseExpr(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			labels, ok := edlLabels(known, n.Name)
			if !ok {
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel && !slices.Contains(labels, m.Name) {
					problems = append(problems, fmt.Sprintf("%s selects %s by %q, which Prometheus stores as the target's", expr, n.Name, m.Name))
				}
			}
		case *parser.AggregateExpr:
			if n.Without {
				return nil
			}
			parser.Inspect(n.Expr, func(inner parser.Node, _ []parser.Node) error {
				vs, ok := inner.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				labels, ok := edlLabels(known, vs.Name)
				if !ok {
					return nil
				}
				for _, g := range n.Grouping {
					if !slices.Contains(labels, g) {
						problems = append(problems, fmt.Sprintf("%s groups %s by %q, which Prometheus stores as the target's", expr, vs.Name, g))
					}
				}
				return nil
			})
		}
		return nil
	})
	return problems
}

// TestNoLabelOfEDLIsOverwrittenByTheScrape: no series edl exposes has a
// label that Prometheus, with honor_labels: false, would rename to
// exported_*.
func TestNoLabelOfEDLIsOverwrittenByTheScrape(t *testing.T) {
	for name, own := range metrics.New("test").Labels() {
		for _, l := range relabel(own) {
			assert.False(t, strings.HasPrefix(l, model.ExportedLabelPrefix), "%s: its label %q becomes %s when scraped", name, strings.TrimPrefix(l, model.ExportedLabelPrefix), l)
		}
	}
	assert.Contains(t, relabel([]string{"namespace", "job"}), "exported_job", "the check sees a collision")
}

// TestQueriesUseLabelsPrometheusKeeps: every alert and every dashboard
// query — its panels and its variables — selects and groups edl's series
// only by labels that are still edl's once Prometheus has stored them, and
// every alert's annotations name only labels its expression keeps.
func TestQueriesUseLabelsPrometheusKeeps(t *testing.T) {
	known := metrics.New("test").Labels()
	groups, errs := rulefmt.Parse(monitoringFile(t, "edl-alerts.rules.yaml"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	templateLabel := regexp.MustCompile(`\$labels\.(\w+)`)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			assert.Empty(t, labelProblems(known, r.Expr), r.Alert)
			kept := keptLabels(t, r.Expr)
			for _, text := range r.Annotations {
				for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
					assert.Contains(t, kept, m[1], "%s: its annotations name $labels.%s, which its expression does not keep", r.Alert, m[1])
				}
			}
		}
	}
	d := readDashboard(t)
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			assert.Empty(t, labelProblems(known, substituteVariables(target.Expr)), p.Title)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+), (\w+)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: %q", v.Name, v.Definition)
		selector := substituteVariables(m[1])
		assert.Empty(t, labelProblems(known, selector), v.Name)
		for _, name := range metricsOf(t, selector) {
			labels, _ := edlLabels(known, name)
			assert.Contains(t, labels, m[2], "variable %s takes the values of %s's label %s", v.Name, name, m[2])
		}
	}
}

// keptLabels are the labels an alert's expression keeps: those of its
// outermost aggregation's by clause, or none.
func keptLabels(t *testing.T, expr string) []string {
	node, err := promql.ParseExpr(expr)
	require.NoError(t, err)
	var kept []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok && kept == nil && !a.Without {
			kept = a.Grouping
		}
		return nil
	})
	return kept
}

// TestLabelProblemsCatchTheTargetsLabels: the checks above fail for
// queries that group or select per-job series by namespace and job.
func TestLabelProblemsCatchTheTargetsLabels(t *testing.T) {
	old := map[string][]string{"edl_job_fulfillment": {"namespace", "job"}}
	assert.Len(t, labelProblems(old, `max by (namespace, job) (edl_job_fulfillment) < 0`), 2)
	assert.Len(t, labelProblems(old, `edl_job_fulfillment{namespace=~"a.*"}`), 1)
	known := metrics.New("test").Labels()
	assert.Empty(t, labelProblems(known, `max by (trainingjob_namespace, trainingjob) (edl_job_fulfillment{trainingjob="a"})`))
	assert.Len(t, labelProblems(known, `sum by (le, namespace) (rate(edl_autoscaler_plan_duration_seconds_bucket[5m]))`), 1)
	assert.Empty(t, labelProblems(known, `sum by (le, pod) (rate(edl_autoscaler_plan_duration_seconds_bucket[5m]))`), "per replica")
}
