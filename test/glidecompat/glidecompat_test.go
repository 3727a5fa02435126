package glidecompat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/test/framework"
)

const module = "github.com/paddlepaddle/edl"

// skipped are the top-level entries of the checkout the copy leaves out:
// version control, build output and a vendor tree a person may have made.
var skipped = map[string]bool{".git": true, "bin": true, "_output": true, "vendor": true}

// copyRepo copies the checkout (the working tree, as a clean clone or a
// source tarball has it) into a temporary directory and returns the copy.
func copyRepo(t *testing.T) string {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	dst := t.TempDir()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if skipped[strings.Split(rel, string(filepath.Separator))[0]] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		default: // symlinks and the like: none belong to the build
			return nil
		}
	})
	require.NoError(t, err)
	return dst
}

// result is what one run of the script did.
type result struct {
	code           int
	stdout, stderr string
}

// script runs glide-compat.sh in dir with args and extra environment.
func script(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "glide-compat.sh"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run glide-compat.sh %v: %v", args, err)
	}
	return res
}

// requirements returns the direct requirements of the go.mod in dir, path
// to version, as the go command reads them.
func requirements(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	var mod struct {
		Require []struct {
			Path, Version string
			Indirect      bool
		}
	}
	require.NoError(t, json.Unmarshal(out, &mod))
	direct := map[string]string{}
	for _, r := range mod.Require {
		if !r.Indirect {
			direct[r.Path] = r.Version
		}
	}
	return direct
}

func TestScriptIsExecutableBash(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(root, "glide-compat.sh"))
	require.NoError(t, err)
	assert.NotZero(t, info.Mode().Perm()&0o111, "glide-compat.sh must be executable")
	data, err := os.ReadFile(filepath.Join(root, "glide-compat.sh"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "#!/usr/bin/env bash\n"), "glide-compat.sh must be a bash script")
	assert.Contains(t, string(data), "\nset -euo pipefail\n")
}

func TestUsageErrorsExitTwoWithOneLine(t *testing.T) {
	dir := copyRepo(t)
	for _, args := range [][]string{
		{},
		{"get"},
		{"--help"},
		{"install", "extra"},
		{"build", "out", "extra"},
		{"yaml", "extra"},
	} {
		t.Run(strings.Join(append([]string{"args"}, args...), "_"), func(t *testing.T) {
			res := script(t, dir, nil, args...)
			assert.Equal(t, 2, res.code)
			assert.Empty(t, res.stdout)
			assert.Regexp(t, `^usage: \S*glide-compat\.sh install \| build \[output\] \| yaml\n$`, res.stderr)
		})
	}
	_, err := os.Stat(filepath.Join(dir, "vendor"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "a usage error must not vendor anything")
}

func TestYAMLListsTheDirectRequirements(t *testing.T) {
	dir := copyRepo(t)
	res := script(t, dir, nil, "yaml")
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)

	var glide struct {
		Package string `json:"package"`
		Import  []struct {
			Package string `json:"package"`
			Version string `json:"version"`
			Repo    string `json:"repo,omitempty"`
		} `json:"import"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(res.stdout), &glide), "output:\n%s", res.stdout)
	assert.Equal(t, module, glide.Package)

	listed := map[string]string{}
	for _, imp := range glide.Import {
		assert.NotContains(t, listed, imp.Package, "listed twice")
		listed[imp.Package] = imp.Version
	}
	want := requirements(t, dir)
	require.Contains(t, want, "k8s.io/client-go", "go.mod must require client-go directly")
	assert.Equal(t, want["k8s.io/client-go"], listed["k8s.io/client-go"])
	assert.Equal(t, want, listed, "exactly the direct requirements of go.mod, at their versions")
}

func TestInstallThenBuildMakesAWorkingBinary(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "vendor"))
	vendorBefore := err == nil

	dir := copyRepo(t)
	res := script(t, dir, nil, "build")
	assert.Equal(t, 1, res.code, "build before install must fail")
	assert.Contains(t, res.stderr, "install", "and say what to run")

	res = script(t, dir, nil, "install")
	require.Equal(t, 0, res.code, "install: %s", res.stderr)
	modules, err := os.ReadFile(filepath.Join(dir, "vendor", "modules.txt"))
	require.NoError(t, err)
	for path, version := range requirements(t, dir) {
		assert.Contains(t, string(modules), "# "+path+" "+version+"\n", "vendor/modules.txt pins %s", path)
	}

	const version = "v9.9.9-glidecompat"
	out := filepath.Join(t.TempDir(), "edl")
	res = script(t, dir, []string{"VERSION=" + version}, "build", out)
	require.Equal(t, 0, res.code, "build: %s", res.stderr)
	got, err := exec.Command(out, "-version").Output()
	require.NoError(t, err)
	assert.Equal(t, "edl "+version+"\n", string(got))

	// The default output is bin/edl, like make build.
	res = script(t, dir, []string{"VERSION=" + version}, "build")
	require.Equal(t, 0, res.code, "build: %s", res.stderr)
	got, err = exec.Command(filepath.Join(dir, "bin", "edl"), "-version").Output()
	require.NoError(t, err)
	assert.Equal(t, "edl "+version+"\n", string(got))

	_, err = os.Stat(filepath.Join(root, "vendor"))
	assert.Equal(t, vendorBefore, err == nil, "the checkout's vendor directory must be left as it was")
}
