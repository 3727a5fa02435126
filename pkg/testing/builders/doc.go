// Package builders makes the Kubernetes objects EDL's tests feed the
// informers, the fake clientsets and the real control plane: pods, nodes,
// TrainingJobs, ReplicaSets and ResourceQuotas, each from a constructor with
// sane defaults and options that change one thing, in the style of
// cluster-autoscaler's BuildTestPod(name, cpu, mem, WithX...):
//
//	builders.Pod("web-0", builders.OnNode("n1"), builders.Requests("1", "1Gi"), builders.Priority(1000))
//	builders.Node("n1", "8", "32Gi", builders.NodeGPU(2), builders.Cordoned())
//	builders.Job("mnist", "team-a", builders.Trainers(2, 6), builders.FaultTolerant())
//
// An option is a plain func of the object, so a table case can carry one
// and a test can write its own. It is test code: only _test.go files and
// the integration tests import it.
package builders

import "time"

// T0 is the time the builders stamp objects with: every pod's creation, a
// deletion, a condition's transition. Tests measure from it.
var T0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
