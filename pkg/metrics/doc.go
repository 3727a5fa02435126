// Package metrics exposes what EDL measures as Prometheus metrics on a
// private registry: the autoscaler's cycles and decisions, the jobs' trainers
// and fulfillment, the cluster's allocation, the controller's work queue and
// failed syncs, the REST client's requests and the leader status.
//
// Metrics implements autoscaler.Metrics and controller.Metrics, so the
// packages that measure never import Prometheus; it serves the registry with
// Handler. See docs/operations.md for the list and suggested alerts.
package metrics
