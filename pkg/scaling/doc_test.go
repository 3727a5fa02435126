package scaling

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportsOnlyStandardLibraryAndGonum keeps the package's promise of
// purity by construction: its code imports the standard library and
// gonum's optimizer and nothing else, so it cannot reach client-go, a
// clock source of EDL's or any state beyond its arguments.
func TestImportsOnlyStandardLibraryAndGonum(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			std := !strings.Contains(strings.Split(path, "/")[0], ".")
			assert.True(t, std || strings.HasPrefix(path, "gonum.org/v1/gonum/"), "%s imports %s", file, path)
			assert.NotEqual(t, "time", path, "%s reads no clock", file)
		}
		checked++
	}
	assert.GreaterOrEqual(t, checked, 5, "the package's files")
}
