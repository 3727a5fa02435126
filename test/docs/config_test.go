package docs

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paddlepaddle/edl/pkg/config"
)

// TestDocsConfigurationTableIsTheConfig compares docs/configuration.md's
// table of the configuration's fields with pkg/config: the same fields in
// the same order, each with its flag and its default.
func TestDocsConfigurationTableIsTheConfig(t *testing.T) {
	guide := readFile(t, "docs/configuration.md")
	rows := regexp.MustCompile("(?m)^\\| `([a-zA-Z.]+)` \\| `-([a-z_]+)` \\| `([^`]*)` \\|$").FindAllStringSubmatch(guide, -1)
	defaults := config.Default()
	var want, got []string
	for _, f := range config.Fields {
		v, _ := f.Get(defaults)
		if f.Path == "gpuResources" {
			v = "[" + strings.ReplaceAll(v, ",", ", ") + "]"
		}
		want = append(want, f.Path+" -"+f.Flag+" "+v)
	}
	for _, r := range rows {
		got = append(got, r[1]+" -"+r[2]+" "+r[3])
	}
	assert.Equal(t, want, got)
}
