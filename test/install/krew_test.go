package install

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// krewManifest is what the test reads of the plugin manifest.
type krewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewPacksEachPlatformAndNamesItsChecksum runs hack/krew, as make krew
// does, on two stand-in binaries: each is packed alone, executable, in its
// platform's archive, and the manifest names each archive's URL and sha256
// for the release.
func TestKrewPacksEachPlatformAndNamesItsChecksum(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	for dir, name := range map[string]string{"linux_amd64": "kubectl-edl", "windows_amd64": "kubectl-edl.exe"} {
		require.NoError(t, os.MkdirAll(filepath.Join(bin, dir), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(bin, dir, name), []byte("binary of "+dir), 0o600))
	}
	cmd := exec.Command("go", "run", "./hack/krew", "-version", "v0.1.0", "-bin-dir", bin, "-out", out, "linux/amd64", "windows/amd64")
	cmd.Dir = root(t)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)

	var m krewManifest
	require.NoError(t, yaml.UnmarshalStrict(mustRead(t, filepath.Join(out, "edl.yaml")), &m, yaml.DisallowUnknownFields))
	assert.Equal(t, "krew.googlecontainertools.github.com/v1alpha2", m.APIVersion)
	assert.Equal(t, "Plugin", m.Kind)
	assert.Equal(t, "edl", m.Metadata.Name, "the plugin is kubectl edl")
	assert.Equal(t, "v0.1.0", m.Spec.Version)
	assert.NotEmpty(t, m.Spec.ShortDescription)
	assert.Contains(t, m.Spec.Caveats, "#install-on-a-cluster", "where to install the controller")
	require.Len(t, m.Spec.Platforms, 2)
	for _, p := range m.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		archive := "kubectl-edl_" + os + "_" + arch + ".tar.gz"
		assert.Equal(t, "https://github.com/paddlepaddle/edl/releases/download/v0.1.0/"+archive, p.URI)
		data := mustRead(t, filepath.Join(out, archive))
		sum := sha256.Sum256(data)
		assert.Equal(t, hex.EncodeToString(sum[:]), p.SHA256, archive)
		name, mode, content := onlyFile(t, filepath.Join(out, archive))
		assert.Equal(t, p.Bin, name)
		assert.Equal(t, int64(0o755), mode, "executable")
		assert.Equal(t, "binary of "+os+"_"+arch, content)
	}
	assert.Equal(t, "kubectl-edl.exe", m.Spec.Platforms[1].Bin)

	// The same binaries pack to the same archives: the checksums of a
	// release do not depend on when it was packed.
	again := t.TempDir()
	cmd = exec.Command("go", "run", "./hack/krew", "-version", "v0.1.0", "-bin-dir", bin, "-out", again, "linux/amd64", "windows/amd64")
	cmd.Dir = root(t)
	msg, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	assert.Equal(t, mustRead(t, filepath.Join(out, "edl.yaml")), mustRead(t, filepath.Join(again, "edl.yaml")))
}

// onlyFile reads the one file of a .tar.gz archive.
func onlyFile(t *testing.T, path string) (name string, mode int64, content string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	require.NoError(t, err)
	data, err := io.ReadAll(tr)
	require.NoError(t, err)
	_, err = tr.Next()
	require.ErrorIs(t, err, io.EOF, "one file only")
	return h.Name, h.Mode, string(data)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path) // #nosec G304 -- the test's own files
	require.NoError(t, err)
	return data
}
