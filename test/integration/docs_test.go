package integration

// The documentation tests that need an API server: what README.md,
// docs/*.md and example/ show must be accepted by the real one. The others,
// which only read text and run the binary, are in test/docs. Run these alone
// with
//
//	go test -count=1 -run TestDocs ./test/integration/
//
// Every fenced code block tagged yaml (or yml) in README.md and docs/*.md
// that holds an apiVersion is applied with a server-side dry run, unless its
// info string says no-apply (see docs.YAMLSources).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlepaddle/edl/test/docs"
	"github.com/paddlepaddle/edl/test/framework"
)

// TestDocsYAMLAppliesWithServerDryRun sends every example file and every
// Kubernetes object in the docs' yaml blocks to the real API server with
// kubectl apply --dry-run=server, into a namespace of the test's (an
// object's own namespace is replaced by it), and expects each one accepted.
func TestDocsYAMLAppliesWithServerDryRun(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	examples, blocks, err := docs.YAMLSources(root)
	require.NoError(t, err)
	names := make([]string, 0, len(examples))
	for _, e := range examples {
		names = append(names, e.Name)
	}
	for _, want := range []string{"example/examplejob.yaml", "example/gpujob.yaml", "example/priorityjob.yaml"} {
		assert.Contains(t, names, want)
	}
	require.NotEmpty(t, blocks, "docs/api.md at least shows a TrainingJob")

	dir := t.TempDir()
	for _, src := range append(examples, blocks...) {
		t.Run(src.Name, func(t *testing.T) {
			objs, err := docs.YAMLDocuments(src.Text)
			require.NoError(t, err, "%s", src.Name)
			require.NotEmpty(t, objs, "no Kubernetes object in %s", src.Name)
			for i, obj := range objs {
				kind, _ := obj["kind"].(string)
				meta, _ := obj["metadata"].(map[string]any)
				require.NotEmpty(t, obj["apiVersion"], "document %d of %s has no apiVersion", i, src.Name)
				require.NotEmpty(t, kind, "document %d of %s has no kind", i, src.Name)
				require.NotNil(t, meta, "document %d of %s has no metadata", i, src.Name)
				name, _ := meta["name"].(string)
				require.NotEmpty(t, name, "document %d of %s has no name", i, src.Name)
				if _, ok := meta["namespace"]; ok {
					meta["namespace"] = ns
				}
				data, err := json.Marshal(obj)
				require.NoError(t, err)
				file := filepath.Join(dir, fmt.Sprintf("%s-%d.json", strings.NewReplacer("/", "_", ":", "_").Replace(src.Name), i))
				require.NoError(t, os.WriteFile(file, data, 0o600))

				out, err := cp.Kubectl(testContext(t), "apply", "--dry-run=server", "-f", file, "-n", ns)
				require.NoError(t, err, "%s %s from %s", kind, name, src.Name)
				assert.Contains(t, out, "/"+name+" ", "kubectl names the object")
				assert.Contains(t, out, "(server dry run)")
			}
		})
	}
}

// TestDocsKubectlCommandsRun runs the README's kubectl commands that verify
// the CRD against the real API server, and checks the short name and the
// printer columns it shows.
func TestDocsKubectlCommandsRun(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	installCRD(t)
	ns := cp.NewNamespace(t)
	ctx := testContext(t)
	out, err := cp.Kubectl(ctx, "apply", "--server-side", "--dry-run=server", "-f", filepath.Join(root, "thirdpartyresource.yaml"))
	require.NoError(t, err)
	assert.Contains(t, out, "customresourcedefinition.apiextensions.k8s.io/trainingjobs.paddlepaddle.org")
	out, err = cp.Kubectl(ctx, "get", "crd", "trainingjobs.paddlepaddle.org")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^NAME\s+CREATED AT\ntrainingjobs\.paddlepaddle\.org\s`, out)
	out, err = cp.Kubectl(ctx, "apply", "--dry-run=server", "-f", filepath.Join(root, "example", "examplejob.yaml"), "-n", ns)
	require.NoError(t, err)
	assert.Contains(t, out, "trainingjob.paddlepaddle.org/example created (server dry run)")
	// The short name and the printer columns the README shows.
	job := exampleJob(t, ns)
	_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	out, err = cp.Kubectl(ctx, "get", "tj", "-n", ns)
	require.NoError(t, err)
	assert.Regexp(t, `^NAME\s+PHASE\s+TRAINERS\s+MIN\s+MAX\s+PROGRESS\s+THROUGHPUT\s+ETA\s+AGE\nexample\s+\S*\s*\S*\s*2\s+6\s`, out)
}
