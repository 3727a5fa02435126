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
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Inputs []struct {
		Name string `json:"name"`
	} `json:"__inputs"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		FieldConfig struct {
			Defaults struct {
				Thresholds *struct {
					Steps []struct {
						Color string   `json:"color"`
						Value *float64 `json:"value"`
					} `json:"steps"`
				} `json:"thresholds"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaVariable matches the dashboard's variables in a query.
var grafanaVariable = regexp.MustCompile(`\$(__rate_interval|namespace|job)\b`)

// substituteVariables puts values in place of the dashboard's variables,
// so that Prometheus' parser reads the query.
func substituteVariables(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		if v == "$__rate_interval" {
			return "5m"
		}
		return ".*"
	})
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	require.NoError(t, json.Unmarshal(monitoringFile(t, "grafana-dashboard.json"), &d))
	return d
}

// TestDashboardIsImportableAndUsesEDLsMetrics: the dashboard is a Grafana
// dashboard JSON with a data source variable every panel uses, the panels
// the guide describes, and queries that parse and use only metrics edl
// exposes.
func TestDashboardIsImportableAndUsesEDLsMetrics(t *testing.T) {
	d := readDashboard(t)
	raw := string(monitoringFile(t, "grafana-dashboard.json"))
	for _, in := range d.Inputs {
		assert.Contains(t, raw, "${"+in.Name+"}", "the input %s is used", in.Name)
	}
	assert.NotEmpty(t, d.UID)
	assert.NotEmpty(t, d.Title)
	variables := map[string]string{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v.Type
	}
	assert.Equal(t, "datasource", variables["datasource"])
	assert.Equal(t, "query", variables["namespace"])
	assert.Equal(t, "query", variables["job"])
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			assert.Equal(t, "${datasource}", v.Datasource.UID, v.Name)
		}
	}
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
			expr := substituteVariables(target.Expr)
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

// TestDashboardShowsWhatTheAlertsQuery: every metric an alert queries is
// on a panel, so that the one who is paged sees its history.
func TestDashboardShowsWhatTheAlertsQuery(t *testing.T) {
	shown := map[string]bool{}
	for _, p := range readDashboard(t).Panels {
		for _, target := range p.Targets {
			for _, name := range metricsOf(t, substituteVariables(target.Expr)) {
				shown[name] = true
			}
		}
	}
	groups, errs := rulefmt.Parse(monitoringFile(t, "edl-alerts.rules.yaml"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			for _, name := range metricsOf(t, r.Expr) {
				assert.True(t, shown[name], "%s queries %s, which no panel shows", r.Alert, name)
			}
		}
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

// TestLeaderStatHasThresholds: the leader stat is green at 1 and red at 0
// and at 2 or more.
func TestLeaderStatHasThresholds(t *testing.T) {
	for _, p := range readDashboard(t).Panels {
		if p.Title != "Leader" {
			continue
		}
		th := p.FieldConfig.Defaults.Thresholds
		require.NotNil(t, th)
		color := func(v float64) string {
			c := ""
			for _, s := range th.Steps {
				if s.Value == nil || v >= *s.Value {
					c = s.Color
				}
			}
			return c
		}
		assert.Equal(t, []string{"red", "green", "red", "red"}, []string{color(0), color(1), color(2), color(3)})
		return
	}
	t.Fatal("no Leader panel")
}

// TestEveryAlertHasARunbook: each alert has a summary, a description and a
// runbook_url pointing to a section of docs/operations.md that exists; and
// one sample never pages: every alert waits with a for.
func TestEveryAlertHasARunbook(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	guide, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(guide), -1) {
		anchors[githubAnchor(m[1])] = true
	}
	groups, errs := rulefmt.Parse(monitoringFile(t, "edl-alerts.rules.yaml"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			assert.NotEmpty(t, r.Annotations["summary"], r.Alert)
			assert.NotEmpty(t, r.Annotations["description"], r.Alert)
			assert.Positive(t, r.For, "%s fires on one sample", r.Alert)
			page, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
			if assert.True(t, ok, "%s: runbook_url %q has no section", r.Alert, r.Annotations["runbook_url"]) {
				assert.True(t, strings.HasSuffix(page, "/docs/operations.md"), r.Alert)
				assert.True(t, anchors[anchor], "%s: docs/operations.md has no section #%s", r.Alert, anchor)
				assert.Equal(t, strings.ToLower(r.Alert), anchor, "the section is named after the alert")
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}
