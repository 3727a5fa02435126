package main

import (
	"bufio"
	"debug/elf"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	require.NoError(t, err)
	return string(data)
}

// dockerInstruction is one instruction of a Dockerfile, continuation lines
// joined.
type dockerInstruction struct{ cmd, args string }

func parseDockerfile(text string) []dockerInstruction {
	var out []dockerInstruction
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// makeRecipe returns the recipe lines of a Makefile target.
func makeRecipe(t *testing.T, makefile, target string) []string {
	t.Helper()
	var lines []string
	in := false
	scanner := bufio.NewScanner(strings.NewReader(makefile))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			lines = append(lines, strings.TrimSpace(line))
		case in:
			return lines
		}
	}
	return lines
}

// buildScript matches the command that builds the binary: hack/build.sh,
// an output path and a version.
var buildScript = regexp.MustCompile(`^hack/build\.sh (\S+) (\S+)$`)

// TestDockerfileBuildsLikeMake: no Docker engine runs here, so this checks
// the Dockerfile as text. Its build stage and `make build` run the same
// script, the script is the static build, and the final image is distroless
// static, nonroot (uid 65532).
func TestDockerfileBuildsLikeMake(t *testing.T) {
	instructions := parseDockerfile(readRepoFile(t, "Dockerfile"))
	var froms, runs []string
	var user, entrypoint string
	copied := map[string]string{}
	for _, in := range instructions {
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
		case "RUN":
			runs = append(runs, in.args)
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "COPY":
			if f := strings.Fields(in.args); len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				copied[f[1]] = f[2]
			}
		}
	}
	require.Len(t, froms, 2, "a build stage and the final image")
	assert.Equal(t, "golang:1.26 AS build", froms[0])
	assert.Equal(t, "gcr.io/distroless/static:nonroot", froms[1])
	assert.Equal(t, "65532:65532", user)

	var dockerBuild []string
	for _, r := range runs {
		if m := buildScript.FindStringSubmatch(r); m != nil {
			dockerBuild = m
		}
		assert.NotContains(t, r, "go build", "the Dockerfile builds only through hack/build.sh")
	}
	require.NotNil(t, dockerBuild, "the Dockerfile runs hack/build.sh: %q", runs)
	assert.Equal(t, `"${VERSION}"`, dockerBuild[2])
	assert.Equal(t, "/usr/local/bin/edl", copied[dockerBuild[1]], "the final image gets the binary the build stage made")
	assert.Equal(t, `["/usr/local/bin/edl"]`, entrypoint)

	recipe := makeRecipe(t, readRepoFile(t, "Makefile"), "build")
	require.Len(t, recipe, 1, "make build is one command")
	makeBuild := buildScript.FindStringSubmatch(recipe[0])
	require.NotNil(t, makeBuild, "make build runs hack/build.sh: %q", recipe[0])
	assert.Equal(t, "bin/edl", makeBuild[1])
	assert.Equal(t, "$(VERSION)", makeBuild[2])

	script := readRepoFile(t, "hack/build.sh")
	assert.Contains(t, script, "\nCGO_ENABLED=0 go build -trimpath -ldflags \"-s -w -X main.version=${version}\" -o \"$out\" ./cmd/edl\n")
	assert.Contains(t, script, "\nCGO_ENABLED=0 go build -trimpath -ldflags \"-s -w -X main.version=${version}\" -o \"$(dirname \"$out\")/kubectl-edl\" ./cmd/kubectl-edl\n",
		"make build builds the kubectl plugin beside edl")
}

// TestBuildFromTheDockerContext runs the build stage's command in a copy of
// what .dockerignore lets into the image build, and checks the result is a
// static binary that reports its version.
func TestBuildFromTheDockerContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds edl")
	}
	root := repoRoot(t)
	var ignored []string
	for _, line := range strings.Split(readRepoFile(t, ".dockerignore"), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			require.NotContains(t, line, "/", "keep .dockerignore to top-level patterns, which this test understands")
			ignored = append(ignored, line)
		}
	}
	context := t.TempDir()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		skip := false
		for _, pattern := range ignored {
			if ok, _ := filepath.Match(pattern, e.Name()); ok {
				skip = true
			}
		}
		switch {
		case skip:
		case e.IsDir():
			require.NoError(t, os.CopyFS(filepath.Join(context, e.Name()), os.DirFS(filepath.Join(root, e.Name()))), e.Name())
		default:
			data, err := os.ReadFile(filepath.Join(root, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(context, e.Name()), data, 0o600))
		}
	}
	_, err = os.Stat(filepath.Join(context, "test"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "the tests stay out of the image build")

	out := filepath.Join(t.TempDir(), "edl")
	cmd := exec.Command(filepath.Join(context, "hack", "build.sh"), out, "v9.9.9-test")
	cmd.Dir = context
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "build in the Docker context: %s", output)

	version, err := exec.Command(out, "-version").Output()
	require.NoError(t, err)
	assert.Equal(t, "edl v9.9.9-test\n", string(version))

	bin, err := elf.Open(out)
	require.NoError(t, err)
	defer bin.Close()
	for _, p := range bin.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no dynamic loader")
	}
	assert.Nil(t, bin.Section(".dynamic"), "a static binary links nothing dynamically")
	assert.Nil(t, bin.Section(".symtab"), "-s strips the symbol table")
}
