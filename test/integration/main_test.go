package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/paddlepaddle/edl/test/framework"
)

// cp is the control plane every test in this package shares; TestMain starts
// it with sharedNodes. Tests get a namespace of their own from newNamespace
// and add any node they need to themselves, tainted so that only their pods
// land there. A test that disrupts the control plane (stops the API server)
// must not call t.Parallel, so it never overlaps a parallel test.
var cp *framework.ControlPlane

// sharedNodes are the nodes of cp: node-0, node-1, node-2, each with 8 CPUs,
// 32Gi of memory, 4 nvidia.com/gpu and room for 110 pods.
var sharedNodes = framework.NodeSpec{Name: "node", CPU: "8", Memory: "32Gi", GPU: 4, Count: 3}

// waitTimeout bounds every wait for the cluster to converge. It is generous:
// a slow machine makes a test slow, never wrong.
const waitTimeout = 90 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	began := time.Now()
	var err error
	cp, err = framework.Start(ctx, framework.Options{Nodes: []framework.NodeSpec{sharedNodes}})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "integration: control plane with %d nodes up in %s\n", sharedNodes.Count, time.Since(began).Round(100*time.Millisecond))
	defer cp.Stop()
	// The CRD goes in first: the garbage collector learns a new resource by
	// rediscovery every 30 s, and the tests that delete jobs want it known.
	crdOnce.Do(func() { crdErr = applyCRD(cp) })
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "integration: control plane logs in %s:\n%s", cp.Dir, cp.LogTails(30))
	}
	return code
}
