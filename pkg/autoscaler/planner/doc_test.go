package planner

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// apiPackages are the import paths a pure planner never reaches: client-go
// (its clientsets, listers, informers, recorders and REST clients alike),
// the generated TrainingJob clients, and EDL's packages that hold them.
var apiPackages = []string{
	"k8s.io/client-go/",
	"github.com/paddlepaddle/edl/pkg/generated/",
	"github.com/paddlepaddle/edl/pkg/cluster",
	"github.com/paddlepaddle/edl/pkg/controller",
	"github.com/paddlepaddle/edl/pkg/autoscaler",
}

// impure lists the packages pkg depends on, itself included, that match one
// of apiPackages; pure packages of EDL's own (the planner, the snapshot
// types, the API types) are allowed by allow.
func impure(t *testing.T, pkg string, allow ...string) []string {
	t.Helper()
	// #nosec G204 -- a fixed go command on this module's package paths
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		if isAllowed(dep, allow) {
			continue
		}
		for _, p := range apiPackages {
			if strings.HasPrefix(dep, p) {
				bad = append(bad, dep)
				break
			}
		}
	}
	return bad
}

func isAllowed(dep string, allow []string) bool {
	for _, a := range allow {
		if dep == a {
			return true
		}
	}
	return false
}

// TestThePlannerCallsNoAPI: the promise of the package doc — no clientset,
// lister, informer, recorder or API call — holds by construction: neither the
// planner nor anything it imports reaches client-go or EDL's runtime
// packages, so no planner code can call the API.
func TestThePlannerCallsNoAPI(t *testing.T) {
	const self = "github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	bad := impure(t, self, self, "github.com/paddlepaddle/edl/pkg/cluster/snapshot")
	require.Empty(t, bad, "the planner imports packages that reach the API; move that code to package autoscaler")
}
