// Package scale measures what the edl binary costs on a big cluster, from
// outside it: its resident memory and CPU time from /proc, the requests it
// sends from kube-apiserver's audit log, how long a wave of the web service
// takes to settle, and one cycle's cost from its /metrics. make scale runs
// it through test/cmd/scale; the figures are in docs/scale.md.
package scale
