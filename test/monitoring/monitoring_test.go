package monitoring

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/pkg/metrics"
	"github.com/paddlepaddle/edl/test/framework"
)

func monitoringFile(t *testing.T, name string) []byte {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "example", "monitoring", name))
	require.NoError(t, err)
	return data
}

var promql = parser.NewParser(parser.Options{})

// metricsOf returns the metric names expr selects.
func metricsOf(t *testing.T, expr string) []string {
	t.Helper()
	node, err := promql.ParseExpr(expr)
	require.NoError(t, err, expr)
	var names []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			require.NotEmpty(t, vs.Name, "select metrics by name: %s", expr)
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// registered says whether name is a metric of edl's registry, or a series
// of one of its histograms.
func registered(known []string, name string) bool {
	if slices.Contains(known, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(known, base) {
			return true
		}
	}
	return false
}

// The alerts the operations guide promises.
var wantAlerts = []string{"EDLNoLeader", "EDLJobQueuedTooLong", "EDLPlanOverBudget", "EDLScalingsFailing"}

// TestAlertRulesParseAndUseEDLsMetrics: the rules file is valid for
// Prometheus (its own parser: the YAML, every expression and template),
// has the alerts the guide promises with a severity and a summary, and
// queries only metrics edl exposes.
func TestAlertRulesParseAndUseEDLsMetrics(t *testing.T) {
	groups, errs := rulefmt.Parse(monitoringFile(t, "edl-alerts.rules.yaml"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	known := metrics.New("test").Names()
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], r.Alert)
			for _, name := range metricsOf(t, r.Expr) {
				assert.True(t, registered(known, name), "alert %s queries %s, which edl does not expose", r.Alert, name)
			}
		}
	}
	for _, a := range wantAlerts {
		assert.Contains(t, alerts, a)
	}

	// The parser is strict enough to catch a broken rule.
	_, errs = rulefmt.Parse([]byte("groups:\n- name: x\n  rules:\n  - alert: A\n    expr: sum(edl_leader\n"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	assert.NotEmpty(t, errs)
}

// TestPrometheusRuleHoldsTheRulesFile: the PrometheusRule's spec is the
// rules file, so that both stay the same alerts.
func TestPrometheusRuleHoldsTheRulesFile(t *testing.T) {
	var rules, cr map[string]any
	require.NoError(t, yaml.Unmarshal(monitoringFile(t, "edl-alerts.rules.yaml"), &rules))
	require.NoError(t, yaml.Unmarshal(monitoringFile(t, "prometheusrule.yaml"), &cr))
	assert.Equal(t, "monitoring.coreos.com/v1", cr["apiVersion"])
	assert.Equal(t, "PrometheusRule", cr["kind"])
	assert.Equal(t, rules, cr["spec"])
}

// dashboard is what the test reads of the Grafana dashboard.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaVariable matches the dashboard's variables in a query.
var grafanaVariable = regexp.MustCompile(`\$(__rate_interval|namespace)\b`)

// TestDashboardIsImportableAndUsesEDLsMetrics: the dashboard is a Grafana
// dashboard JSON with a data source variable every panel uses, the panels
// the guide describes, and queries that parse and use only metrics edl
// exposes.
func TestDashboardIsImportableAndUsesEDLsMetrics(t *testing.T) {
	var d dashboard
	require.NoError(t, json.Unmarshal(monitoringFile(t, "grafana-dashboard.json"), &d))
	assert.NotEmpty(t, d.UID)
	assert.NotEmpty(t, d.Title)
	variables := map[string]string{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v.Type
	}
	assert.Equal(t, "datasource", variables["datasource"])
	known := metrics.New("test").Names()
	used := map[string]bool{}
	var titles []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		assert.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			assert.NotEmpty(t, target.RefID)
			expr := grafanaVariable.ReplaceAllStringFunc(target.Expr, func(v string) string {
				if v == "$__rate_interval" {
					return "5m"
				}
				return ".*"
			})
			assert.NotContains(t, expr, "$", "an unknown variable in %q", target.Expr)
			for _, name := range metricsOf(t, expr) {
				used[name] = true
				assert.True(t, registered(known, name), "panel %q queries %s, which edl does not expose", p.Title, name)
			}
		}
	}
	for _, want := range []string{"Cluster utilization against the load target", "Trainers per job", "Scalings by reason",
		"Admission queue", "Queue wait", "Plan duration", "API writes"} {
		assert.Contains(t, titles, want)
	}
	for _, m := range []string{"edl_autoscaler_max_load_desired", "edl_admission_queued_jobs", "edl_admission_wait_seconds_bucket",
		"edl_autoscaler_plan_duration_seconds_bucket", "edl_rest_client_requests_total", "edl_job_trainers"} {
		assert.True(t, used[m], "the dashboard shows %s", m)
	}
}

// TestRegisteredCatchesARename: the check the two tests above rely on
// fails for a name edl does not expose.
func TestRegisteredCatchesARename(t *testing.T) {
	known := metrics.New("test").Names()
	assert.True(t, registered(known, "edl_autoscaler_plan_duration_seconds_bucket"))
	assert.False(t, registered(known, "edl_autoscaler_plan_seconds_bucket"))
	assert.False(t, registered(known, "edl_leaders"))
}

// TestOperationsGuideListsTheAlerts: docs/operations.md's alert table
// names exactly the alerts of the rules file.
func TestOperationsGuideListsTheAlerts(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	guide, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	require.NoError(t, err)
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(EDL\\w+)` \\|").FindAllStringSubmatch(string(guide), -1) {
		documented = append(documented, m[1])
	}
	groups, errs := rulefmt.Parse(monitoringFile(t, "edl-alerts.rules.yaml"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
		}
	}
	assert.Equal(t, alerts, documented)
}
