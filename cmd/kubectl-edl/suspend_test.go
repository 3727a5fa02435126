package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
)

func tjob(name string, suspended bool) *v1.TrainingJob {
	return &v1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: v1.TrainingJobSpec{Suspend: suspended}}
}

// patches counts the patches a client received, and which were dry runs.
func patches(c *tjfake.Clientset) (applied, dry int) {
	for _, a := range c.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			if len(p.(clienttesting.PatchActionImpl).PatchOptions.DryRun) > 0 {
				dry++
			} else {
				applied++
			}
		}
	}
	return applied, dry
}

// TestSuspendSeveralJobsSaysWhatChanged: suspend takes several names or
// --all, says "unchanged" for a job already suspended and patches only the
// others; a dry run changes nothing, the server one sends the patch as a
// dry run; a missing job does not stop the others.
func TestSuspendSeveralJobsSaysWhatChanged(t *testing.T) {
	suspended := func(c *tjfake.Clientset, name string) bool {
		j, err := c.PaddlepaddleV1().TrainingJobs("team").Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		return j.Spec.Suspend
	}
	t.Run("names", func(t *testing.T) {
		c := tjfake.NewClientset(tjob("a", false), tjob("b", true))
		var out, errOut bytes.Buffer
		require.NoError(t, setSuspend(t.Context(), c, "team", []string{"a", "b"}, false, true, "none", &out, &errOut))
		assert.Equal(t, "trainingjob.paddlepaddle.org/a suspended\ntrainingjob.paddlepaddle.org/b unchanged\n", out.String())
		assert.True(t, suspended(c, "a"))
		applied, _ := patches(c)
		assert.Equal(t, 1, applied, "no patch for what is already so")
	})
	t.Run("all, resume", func(t *testing.T) {
		c := tjfake.NewClientset(tjob("a", true), tjob("b", true), tjob("c", false))
		var out, errOut bytes.Buffer
		require.NoError(t, setSuspend(t.Context(), c, "team", nil, true, false, "none", &out, &errOut))
		assert.Equal(t, "trainingjob.paddlepaddle.org/a resumed\ntrainingjob.paddlepaddle.org/b resumed\ntrainingjob.paddlepaddle.org/c unchanged\n", out.String())
		assert.False(t, suspended(c, "a"))
		assert.False(t, suspended(c, "b"))
	})
	t.Run("client dry run", func(t *testing.T) {
		c := tjfake.NewClientset(tjob("a", false))
		var out, errOut bytes.Buffer
		require.NoError(t, setSuspend(t.Context(), c, "team", []string{"a"}, false, true, "client", &out, &errOut))
		assert.Equal(t, "trainingjob.paddlepaddle.org/a suspended (dry run)\n", out.String())
		assert.False(t, suspended(c, "a"), "a dry run changes nothing")
		applied, dry := patches(c)
		assert.Zero(t, applied+dry, "and sends nothing")
	})
	t.Run("server dry run", func(t *testing.T) {
		c := tjfake.NewClientset(tjob("a", false))
		// The fake applies what it is sent; the API server would not apply
		// a dry run.
		c.PrependReactor("patch", "trainingjobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if len(a.(clienttesting.PatchActionImpl).PatchOptions.DryRun) > 0 {
				return true, tjob("a", true), nil
			}
			return false, nil, nil
		})
		var out, errOut bytes.Buffer
		require.NoError(t, setSuspend(t.Context(), c, "team", []string{"a"}, false, true, "server", &out, &errOut))
		assert.Equal(t, "trainingjob.paddlepaddle.org/a suspended (server dry run)\n", out.String())
		assert.False(t, suspended(c, "a"))
		applied, dry := patches(c)
		assert.Equal(t, []int{0, 1}, []int{applied, dry}, "the patch goes as a dry run")
	})
	t.Run("a missing job", func(t *testing.T) {
		c := tjfake.NewClientset(tjob("b", false))
		var out, errOut bytes.Buffer
		err := setSuspend(t.Context(), c, "team", []string{"nope", "b"}, false, true, "none", &out, &errOut)
		require.ErrorIs(t, err, errUsage)
		assert.EqualError(t, err, "TrainingJob team/nope not found")
		assert.Equal(t, "trainingjob.paddlepaddle.org/b suspended\n", out.String(), "the others are done")
	})
	t.Run("none with --all", func(t *testing.T) {
		var out, errOut bytes.Buffer
		require.NoError(t, setSuspend(t.Context(), tjfake.NewClientset(), "team", nil, true, true, "none", &out, &errOut))
		assert.Empty(t, out.String())
		assert.Equal(t, "No TrainingJobs in namespace team.\n", errOut.String())
	})
}

// TestSuspendFlags: --all and names exclude each other, --dry-run takes
// kubectl's values.
func TestSuspendFlags(t *testing.T) {
	stub := writeKubeconfig(t, stubServer(t, true), "team")
	for args, want := range map[string][]string{
		"jobs and --all":                 {"suspend", "a", "--all", "--kubeconfig", stub},
		`invalid --dry-run "maybe"`:      {"resume", "a", "--dry-run=maybe", "--kubeconfig", stub},
		"name one job or more, or --all": {"resume", "--kubeconfig", stub},
	} {
		code, _, stderr := runPlugin(want...)
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, args)
	}
}

// TestCompletionIsThePlugins: the completion scripts complete kubectl-edl,
// never kubectl itself, and the binary run as kubectl_complete-edl
// answers kubectl's completion requests.
func TestCompletionIsThePlugins(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := runPlugin("completion", shell)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "kubectl-edl", shell)
		assert.NotRegexp(t, `(?m)complete\b.*\skubectl$`, stdout, "%s: registers completion for kubectl itself", shell)
		assert.NotContains(t, stdout, "__start_kubectl\n", shell)
		assert.NotContains(t, stdout, "compdef _kubectl kubectl", shell)
	}
	assert.Equal(t, []string{"__complete", "sus"}, commandLine("/usr/local/bin/kubectl_complete-edl", []string{"sus"}))
	assert.Equal(t, []string{"suspend"}, commandLine("/usr/local/bin/kubectl-edl", []string{"suspend"}))
	code, stdout, _ := runPlugin(commandLine("kubectl_complete-edl", []string{"sus"})...)
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "suspend\t")
}
