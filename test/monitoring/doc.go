// Package monitoring tests the monitoring that example/monitoring ships:
// the alerting rules parse with Prometheus' own rule parser, the
// PrometheusRule holds the same rules, the Grafana dashboard is importable,
// and every metric the rules and the dashboard query is one that edl's
// registry exposes, so that renaming a metric fails here.
package monitoring
