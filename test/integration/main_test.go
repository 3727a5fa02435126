package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// newNamespace creates a namespace named after the test and deletes it when
// the test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		err := cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// testContext returns a context that ends with the test or after waitTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// podMutator changes a pod that newPod builds.
type podMutator func(*corev1.Pod)

// newPod builds a pod with one container that requests 100m CPU and 64Mi of memory.
func newPod(name string, mutators ...podMutator) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "paddlepaddle/edl-fake:latest",
				Resources: requests("100m", "64Mi"),
			}},
		},
	}
	for _, m := range mutators {
		m(pod)
	}
	return pod
}

func requests(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}}
}
