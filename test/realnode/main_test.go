package realnode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddlepaddle/edl/test/framework"
)

// requireEnv, when set, turns a skip for want of a real node into a failure.
const requireEnv = "EDL_REQUIRE_REAL_NODE"

var (
	shared     *framework.ControlPlane
	sharedErr  error
	sharedOnce sync.Once
	stopped    bool
)

// plane returns the package's control plane with the real node, starting it
// on first use; a test skips (or fails, under EDL_REQUIRE_REAL_NODE) when
// this machine cannot run one.
func plane(t *testing.T) *framework.ControlPlane {
	t.Helper()
	bin, err := framework.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if missing := framework.RealNodeMissing(bin); missing != "" {
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("%s (%s is set)", missing, requireEnv)
		}
		t.Skip(missing)
	}
	if stopped {
		t.Fatal("the package's control plane was stopped")
	}
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		shared, sharedErr = framework.Start(ctx, framework.Options{RealNode: true})
	})
	if sharedErr != nil {
		t.Fatalf("start a control plane with a real node: %v", sharedErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil && !stopped {
		_ = shared.Stop()
	}
	os.Exit(code)
}

// release is the release in VERSION, the tag of the images hack/images.sh builds.
func release(t *testing.T) string {
	t.Helper()
	root, err := framework.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

// exampleImage is the example trainer image: Debian with Python, torch and
// the paddle_k8s shell launcher.
func exampleImage(t *testing.T) string {
	return "paddlepaddle/edl-torch-example:" + release(t)
}
