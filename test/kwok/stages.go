package kwok

import "embed"

// Stages holds stages/*.yaml, one kwok Stage per file.
//
//go:embed stages/*.yaml
var Stages embed.FS

const (
	// NodeAnnotation marks the nodes kwok manages; it leaves all others alone.
	NodeAnnotation = "kwok.x-k8s.io/node"
	// NodeAnnotationValue is the value of NodeAnnotation on kwok's nodes.
	NodeAnnotationValue = "fake"

	// ExitCodeAnnotation, set on a pod to an integer, makes kwok terminate
	// the pod's containers with that exit code once the pod is Running
	// (stages/pod-exit.yaml).
	ExitCodeAnnotation = "edl.paddlepaddle.org/fake-exit-code"
	// ExitAfterAnnotation, a Go duration such as "30s", delays the exit that
	// ExitCodeAnnotation asks for by that long after the pod is Running.
	ExitAfterAnnotation = "edl.paddlepaddle.org/fake-exit-after"
)
