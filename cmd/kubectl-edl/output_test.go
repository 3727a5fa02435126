package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemplatedOutput: -o name names the jobs as kubectl names objects,
// -o jsonpath and -o go-template read what -o json prints.
func TestTemplatedOutput(t *testing.T) {
	q := Queue{Jobs: []QueuedJob{{Namespace: "team", Name: "a", Position: 1, Of: 2, Reason: "Unplaceable"}, {Namespace: "team", Name: "b", Position: 2, Of: 2}}}
	cases := []struct{ output, want string }{
		{"name", "trainingjob.paddlepaddle.org/a\ntrainingjob.paddlepaddle.org/b\n"},
		{"jsonpath={.jobs[*].name}", "a b"},
		{"jsonpath=.jobs[0].reason", "Unplaceable"},
		{`jsonpath={range .jobs[*]}{.name}:{.position}{"\n"}{end}`, "a:1\nb:2\n"},
		{`go-template={{range .jobs}}{{.namespace}}/{{.name}} {{end}}`, "team/a team/b "},
	}
	for _, c := range cases {
		t.Run(c.output, func(t *testing.T) {
			require.NoError(t, checkOutput(c.output))
			var out bytes.Buffer
			done, err := printTemplated(&out, c.output, q)
			require.NoError(t, err)
			assert.True(t, done)
			assert.Equal(t, c.want, out.String())
		})
	}
	for _, o := range []string{"", "wide", "json", "yaml"} {
		done, err := printTemplated(&bytes.Buffer{}, o, q)
		assert.NoError(t, err)
		assert.False(t, done, "%q is the command's own", o)
	}
	_, err := printTemplated(&bytes.Buffer{}, "jsonpath={.nope}", q)
	assert.ErrorContains(t, err, "nope is not found")
	assert.ErrorIs(t, checkOutput("go-template={{"), errUsage)
}
