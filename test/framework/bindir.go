package framework

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinDirEnv names the environment variable that points at the control plane
// binaries, as the Makefile exports it. When it is unset, BinDir asks
// hack/build-control-plane.sh where the binaries of the pinned versions are.
const BinDirEnv = "EDL_CONTROLPLANE_BIN"

const modulePath = "github.com/paddlepaddle/edl"

// CacheDir is the directory EDL's scripts and commands keep their state in,
// as hack/build-control-plane.sh and hack/cluster.sh resolve it:
// $EDL_CACHE_DIR, or ~/.cache/edl.
func CacheDir() string {
	if d := os.Getenv("EDL_CACHE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "edl")
}

// binaries lists what Start runs, all expected in BinDir.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"}

// BinDir returns the directory holding the control plane binaries: $EDL_CONTROLPLANE_BIN
// when set, otherwise what `hack/build-control-plane.sh --print-dir` prints,
// the script found in the EDL module that contains the working directory.
// The directory may not exist yet; Start says so.
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("find the control plane binaries: set %s or run inside the EDL module: %w", BinDirEnv, err)
	}
	script := filepath.Join(root, "hack", "build-control-plane.sh")
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script, "--print-dir")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --print-dir: %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("%s --print-dir printed nothing", script)
	}
	return dir, nil
}

// ModuleRoot returns the root directory of the EDL Go module, found by walking
// up from the working directory to the go.mod that declares it.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(data, modulePath) {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func declaresModule(goMod []byte, path string) bool {
	for line := range strings.Lines(string(goMod)) {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == "module" && strings.Trim(fields[1], `"`) == path {
			return true
		}
	}
	return false
}

// checkBinaries returns an error naming the first binary missing from dir.
func checkBinaries(dir string) error {
	for _, name := range binaries {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return fmt.Errorf("control plane binary %s is missing from %s: run `make controlplane` (hack/build-control-plane.sh) first", name, dir)
		}
	}
	return nil
}
