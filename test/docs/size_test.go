package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documentation's size limits: a README a newcomer reads whole, pages
// that each answer a question, and docs that stay a size one can read.
const (
	readmeMaxBytes = 12 * 1024  // README.md
	pageMaxBytes   = 40 * 1024  // each docs/*.md
	docsMaxBytes   = 272 * 1024 // docs/*.md together
)

// answersPrefix opens every docs page: the first line of text after its
// title says which question the page answers.
const answersPrefix = "This page answers: "

// TestDocsSizes checks that README.md stays within 12 KB and every
// docs/*.md page within 40 KB.
func TestDocsSizes(t *testing.T) {
	root := moduleRoot(t)
	info, err := os.Stat(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	assert.LessOrEqual(t, info.Size(), int64(readmeMaxBytes), "README.md is %d bytes; move long material to docs/", info.Size())

	pages := 0
	for _, md := range markdownFiles(t) {
		if md == "README.md" {
			continue
		}
		info, err := os.Stat(filepath.Join(root, md))
		require.NoError(t, err)
		assert.LessOrEqual(t, info.Size(), int64(pageMaxBytes), "%s is %d bytes; split it by question", md, info.Size())
		pages++
	}
	require.Positive(t, pages)
}

// TestDocsTotalSize checks that docs/*.md together stay within 272 KB.
func TestDocsTotalSize(t *testing.T) {
	root := moduleRoot(t)
	var total int64
	for _, md := range markdownFiles(t) {
		if md == "README.md" {
			continue
		}
		info, err := os.Stat(filepath.Join(root, md))
		require.NoError(t, err)
		total += info.Size()
	}
	assert.LessOrEqual(t, total, int64(docsMaxBytes), "docs/*.md hold %d bytes together", total)
}

// TestDocsPagesSayWhatTheyAnswer checks that every docs/*.md page opens with
// its title and then a line "This page answers: …".
func TestDocsPagesSayWhatTheyAnswer(t *testing.T) {
	for _, md := range markdownFiles(t) {
		if md == "README.md" {
			continue
		}
		lines := strings.Split(readFile(t, md), "\n")
		require.NotEmpty(t, lines, md)
		assert.True(t, strings.HasPrefix(lines[0], "# "), "%s opens with its # title", md)
		var first string
		for _, line := range lines[1:] {
			if strings.TrimSpace(line) != "" {
				first = line
				break
			}
		}
		assert.True(t, strings.HasPrefix(first, answersPrefix), "%s: the first line after the title starts with %q, not %q", md, answersPrefix, first)
	}
}
