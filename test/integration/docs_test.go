package integration

// The documentation tests: what README.md, docs/*.md and example/ show must
// work against the real API server and the real binary, so that the docs
// cannot rot. Run them alone with
//
//	go test -count=1 -run TestDocs ./test/integration/
//
// Every fenced code block tagged yaml (or yml) in README.md and docs/*.md
// that holds an apiVersion is applied with a server-side dry run. A block
// that is deliberately not a complete object (a fragment, an excerpt with
// placeholders) opts out by adding no-apply to its info string:
// "```yaml no-apply".

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/controller"
	"github.com/paddlepaddle/edl/test/framework"
)

// moduleRoot returns the repository's root directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	return root
}

// markdownFiles returns README.md and docs/*.md, relative to the root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	root := moduleRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		require.NoError(t, err)
		files = append(files, rel)
	}
	require.GreaterOrEqual(t, len(files), 4, "README.md and the docs")
	return files
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), rel))
	require.NoError(t, err)
	return string(data)
}

// codeBlock is one fenced code block of a markdown file.
type codeBlock struct {
	info string // the info string after the opening fence: "yaml", "sh", ...
	line int    // line of the opening fence, from 1
	text string
}

// lang is the block's language: the first word of its info string.
func (b codeBlock) lang() string {
	if f := strings.Fields(b.info); len(f) > 0 {
		return f[0]
	}
	return ""
}

// parseMarkdown splits a markdown text into its fenced code blocks and its
// prose (everything outside them).
func parseMarkdown(text string) (blocks []codeBlock, prose string) {
	var out strings.Builder
	var cur *codeBlock
	var body strings.Builder
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				cur = &codeBlock{info: strings.TrimSpace(trimmed[3:]), line: i + 1}
				body.Reset()
				continue
			}
			out.WriteString(line)
			out.WriteByte('\n')
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(trimmed[3:]) == "" {
			cur.text = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	return blocks, out.String()
}

// yamlDocuments splits a YAML stream into its documents, skipping empty ones.
func yamlDocuments(t *testing.T, data string) []map[string]any {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(data)))
	var docs []map[string]any
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &obj), "YAML document:\n%s", doc)
		if obj == nil { // only comments
			continue
		}
		docs = append(docs, obj)
	}
}

// yamlSource is a file or code block of Kubernetes objects to dry-run.
type yamlSource struct {
	name string
	text string
}

// yamlSources returns every YAML file of example/ and every yaml code block
// of README.md and docs/*.md that holds an apiVersion.
func yamlSources(t *testing.T) (examples, blocks []yamlSource) {
	t.Helper()
	root := moduleRoot(t)
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		files, err := filepath.Glob(filepath.Join(root, "example", pattern))
		require.NoError(t, err)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			examples = append(examples, yamlSource{name: "example/" + filepath.Base(f), text: string(data)})
		}
	}
	for _, md := range markdownFiles(t) {
		parsed, _ := parseMarkdown(readFile(t, md))
		for _, b := range parsed {
			if (b.lang() != "yaml" && b.lang() != "yml") || strings.Contains(b.info, "no-apply") ||
				!strings.Contains(b.text, "apiVersion:") {
				continue
			}
			blocks = append(blocks, yamlSource{name: fmt.Sprintf("%s:%d", md, b.line), text: b.text})
		}
	}
	return examples, blocks
}

// TestDocsYAMLAppliesWithServerDryRun sends every example file and every
// Kubernetes object in the docs' yaml blocks to the real API server with
// kubectl apply --dry-run=server, into a namespace of the test's (an
// object's own namespace is replaced by it), and expects each one accepted.
func TestDocsYAMLAppliesWithServerDryRun(t *testing.T) {
	installCRD(t)
	ns := newNamespace(t)
	examples, blocks := yamlSources(t)
	names := make([]string, 0, len(examples))
	for _, e := range examples {
		names = append(names, e.name)
	}
	for _, want := range []string{"example/examplejob.yaml", "example/gpujob.yaml", "example/priorityjob.yaml"} {
		assert.Contains(t, names, want)
	}
	require.NotEmpty(t, blocks, "docs/api.md at least shows a TrainingJob")

	dir := t.TempDir()
	for _, src := range append(examples, blocks...) {
		t.Run(src.name, func(t *testing.T) {
			docs := yamlDocuments(t, src.text)
			require.NotEmpty(t, docs, "no Kubernetes object in %s", src.name)
			for i, obj := range docs {
				kind, _ := obj["kind"].(string)
				meta, _ := obj["metadata"].(map[string]any)
				require.NotEmpty(t, obj["apiVersion"], "document %d of %s has no apiVersion", i, src.name)
				require.NotEmpty(t, kind, "document %d of %s has no kind", i, src.name)
				require.NotNil(t, meta, "document %d of %s has no metadata", i, src.name)
				name, _ := meta["name"].(string)
				require.NotEmpty(t, name, "document %d of %s has no name", i, src.name)
				if _, ok := meta["namespace"]; ok {
					meta["namespace"] = ns
				}
				data, err := json.Marshal(obj)
				require.NoError(t, err)
				file := filepath.Join(dir, fmt.Sprintf("%s-%d.json", strings.NewReplacer("/", "_", ":", "_").Replace(src.name), i))
				require.NoError(t, os.WriteFile(file, data, 0o600))

				out, err := cp.Kubectl(testContext(t), "apply", "--dry-run=server", "-f", file, "-n", ns)
				require.NoError(t, err, "%s %s from %s", kind, name, src.name)
				assert.Contains(t, out, "/"+name+" ", "kubectl names the object")
				assert.Contains(t, out, "(server dry run)")
			}
		})
	}
}

// exampleJobs parses every TrainingJob of example/ strictly, as kubectl's
// strict field validation would.
func exampleJobs(t *testing.T) map[string]*v1.TrainingJob {
	t.Helper()
	examples, _ := yamlSources(t)
	jobs := map[string]*v1.TrainingJob{}
	for _, src := range examples {
		for _, obj := range yamlDocuments(t, src.text) {
			if obj["kind"] != "TrainingJob" {
				continue
			}
			data, err := json.Marshal(obj)
			require.NoError(t, err)
			job := &v1.TrainingJob{}
			require.NoError(t, yaml.UnmarshalStrict(data, job), "%s", src.name)
			jobs[src.name+"/"+job.Name] = job
		}
	}
	require.GreaterOrEqual(t, len(jobs), 3)
	return jobs
}

// TestDocsExampleJobsAreValidAndRunnable checks what the API server cannot:
// that the example jobs pass the controller's own validation, that GPU
// requests equal limits (the pods' API rejects anything else for an extended
// resource, so the ReplicaSet could never create them), that the GPU job
// really asks for GPUs and the priority job names the PriorityClass its file
// defines.
func TestDocsExampleJobsAreValidAndRunnable(t *testing.T) {
	jobs := exampleJobs(t)
	sawGPU, sawPriority := false, false
	for name, job := range jobs {
		t.Run(name, func(t *testing.T) {
			defaulted := job.DeepCopy()
			v1.SetObjectDefaults_TrainingJob(defaulted)
			assert.Empty(t, v1.Validate(defaulted), "the controller would mark it Invalid")
			for role, res := range map[string]corev1.ResourceRequirements{
				"trainer": job.Spec.Trainer.Resources, "pserver": job.Spec.Pserver.Resources, "master": job.Spec.Master.Resources,
			} {
				req, hasReq := res.Requests[cluster.DefaultGPUResourceName]
				lim, hasLim := res.Limits[cluster.DefaultGPUResourceName]
				if !hasReq && !hasLim {
					continue
				}
				assert.True(t, hasReq && hasLim && req.Cmp(lim) == 0, "%s: nvidia.com/gpu request %v must equal limit %v", role, req.String(), lim.String())
			}
			for _, env := range controller.Env(defaulted, v1.RoleTrainer, nil) {
				if env.Name == "PADDLE_INIT_USE_GPU" && env.Value == "true" {
					sawGPU = true
				}
			}
			if job.Spec.PriorityClassName != "" {
				sawPriority = true
				file := strings.SplitN(name, "/", 3)
				text := readFile(t, file[0]+"/"+file[1])
				assert.Contains(t, text, "kind: PriorityClass\nmetadata:\n  name: "+job.Spec.PriorityClassName+"\n",
					"the file defines the PriorityClass the job names")
			}
		})
	}
	assert.True(t, sawGPU, "an example job has GPU trainers")
	assert.True(t, sawPriority, "an example job has a priorityClassName")
}

// TestDocsExampleTrainFTReadsThePodContract checks that example/train_ft.py
// reads only environment variables the controller sets (apart from the two
// it documents as the user's), that it reads the core of the contract, that
// the job image's Dockerfile puts it where the example job runs it from, and,
// where python3 is installed, that it compiles.
func TestDocsExampleTrainFTReadsThePodContract(t *testing.T) {
	script := readFile(t, "example/train_ft.py")
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`\benv(?:_int|_bool)?\("([A-Z0-9_]+)"`).FindAllStringSubmatch(script, -1) {
		read[m[1]] = true
	}
	require.NotEmpty(t, read)

	job := exampleJob(t, "default")
	v1.SetObjectDefaults_TrainingJob(job)
	require.True(t, job.Spec.FaultTolerant, "examplejob.yaml is the fault-tolerant example")
	set := map[string]bool{}
	for _, env := range controller.Env(job, v1.RoleTrainer, nil) {
		set[env.Name] = true
	}
	userSet := map[string]bool{"DATA_DIR": true, "OUTPUT_DIR": true}
	for name := range read {
		if !userSet[name] {
			assert.True(t, set[name], "train_ft.py reads %s, which the controller does not set", name)
		}
	}
	for _, name := range []string{"PADDLE_JOB_NAME", "PADDLE_TRAINING_ROLE", "PADDLE_ETCD_ENDPOINTS", "TRAINER_PACKAGE",
		"PADDLE_INIT_PORT", "PADDLE_INIT_TRAINER_COUNT", "PADDLE_INIT_USE_GPU", "PADDLE_INIT_NUM_PASSES"} {
		assert.True(t, read[name], "train_ft.py reads %s", name)
	}

	// The entrypoint runs /workspace/train_ft.py; the Dockerfile puts it there.
	assert.Contains(t, job.Spec.Trainer.Entrypoint, "/workspace/train_ft.py")
	dockerfile := readFile(t, "example/Dockerfile")
	var instructions []string
	for _, line := range strings.Split(dockerfile, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			instructions = append(instructions, line)
		}
	}
	require.NotEmpty(t, instructions)
	assert.Equal(t, "FROM paddlepaddle/paddlecloud-job", instructions[0])
	assert.Contains(t, instructions, "COPY train_ft.py /workspace/train_ft.py")

	python, err := exec.LookPath("python3")
	if err != nil {
		t.Log("python3 is not installed: train_ft.py is not compiled")
		return
	}
	out, err := exec.Command(python, "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')",
		filepath.Join(moduleRoot(t), "example", "train_ft.py")).CombinedOutput()
	assert.NoError(t, err, "train_ft.py must be valid Python: %s", out)
}

// helpFlag is one flag as `edl -help` prints it.
type helpFlag struct {
	name, def string // def is "" when -help shows no default
}

// edlFlags runs `edl -help` and parses the flag.PrintDefaults listing.
func edlFlags(t *testing.T) map[string]helpFlag {
	t.Helper()
	out, err := exec.Command(edlBinary(t), "-help").Output()
	require.NoError(t, err, "edl -help exits 0")
	flags := map[string]helpFlag{}
	var cur *helpFlag
	defaultRe := regexp.MustCompile(`\(default (.+)\)$`)
	for _, line := range strings.Split(string(out), "\n") {
		if m := regexp.MustCompile(`^  -(\S+)`).FindStringSubmatch(line); m != nil {
			if cur != nil {
				flags[cur.name] = *cur
			}
			cur = &helpFlag{name: m[1]}
			continue
		}
		if cur != nil {
			if m := defaultRe.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				cur.def = strings.Trim(m[1], `"`)
			}
		}
	}
	if cur != nil {
		flags[cur.name] = *cur
	}
	require.Contains(t, flags, "kubeconfig", "edl -help lists the flags:\n%s", out)
	return flags
}

// TestDocsFlagTableIsEDLsFlags compares the README's flag table with the
// flags the built binary has: the same set, and each default -help prints
// appears in its row.
func TestDocsFlagTableIsEDLsFlags(t *testing.T) {
	flags := edlFlags(t)
	readme := readFile(t, "README.md")
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `-([a-z_0-9]+)` \\|([^|]*)\\|").FindAllStringSubmatch(readme, -1) {
		assert.NotContains(t, rows, m[1], "flag -%s has two rows", m[1])
		rows[m[1]] = m[2]
	}
	for name, f := range flags {
		if name == "help" || name == "h" {
			continue
		}
		cell, ok := rows[name]
		if !assert.True(t, ok, "README's flag table has no row for -%s", name) {
			continue
		}
		if f.def != "" {
			assert.Contains(t, cell, "`"+f.def+"`", "README's default of -%s", name)
		}
	}
	for name := range rows {
		assert.Contains(t, flags, name, "README's flag table lists -%s, which edl does not have", name)
	}
}

// TestDocsCommandsRun runs the README's commands that can run here: the
// version of the built binary, `make -n` of every make target the README
// names, the kubectl commands that verify the CRD, and it checks that the
// files the commands name exist.
func TestDocsCommandsRun(t *testing.T) {
	root := moduleRoot(t)
	readme := readFile(t, "README.md")
	blocks, prose := parseMarkdown(readme)

	t.Run("edl -version", func(t *testing.T) {
		out, err := exec.Command(edlBinary(t), "-version").Output()
		require.NoError(t, err)
		assert.Regexp(t, `^edl \S+\n$`, string(out))
	})

	// The commands of the README: the lines of its sh blocks and its inline
	// code spans.
	var commands []string
	for _, b := range blocks {
		if b.lang() == "sh" || b.lang() == "bash" || b.lang() == "console" {
			for _, line := range strings.Split(b.text, "\n") {
				if line = strings.TrimSpace(strings.SplitN(line, "#", 2)[0]); line != "" {
					commands = append(commands, line)
				}
			}
		}
	}
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(prose, -1) {
		commands = append(commands, m[1])
	}

	targets := map[string]bool{}
	targetRe := regexp.MustCompile(`(?:^|[\s;&|(])make ([a-z][a-z0-9-]*)`)
	for _, c := range commands {
		for _, m := range targetRe.FindAllStringSubmatch(c, -1) {
			targets[m[1]] = true
		}
	}
	for _, want := range []string{"demo", "test", "build", "cluster-down"} {
		assert.True(t, targets[want], "the README names make %s", want)
	}
	names := make([]string, 0, len(targets))
	for target := range targets {
		names = append(names, target)
	}
	sort.Strings(names)
	for _, target := range names {
		t.Run("make -n "+target, func(t *testing.T) {
			cmd := exec.Command("make", "-n", target)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "make -n %s: %s", target, out)
		})
	}

	t.Run("files", func(t *testing.T) {
		files := map[string]bool{}
		fileRe := regexp.MustCompile(`(?:-f|create -f|apply -f)\s+(\S+\.ya?ml)\b`)
		for _, c := range commands {
			for _, m := range fileRe.FindAllStringSubmatch(c, -1) {
				files[m[1]] = true
			}
			if strings.HasPrefix(c, "./glide-compat.sh") {
				files["glide-compat.sh"] = true
			}
		}
		for _, want := range []string{"thirdpartyresource.yaml", "edl_controller.yaml", "example/examplejob.yaml"} {
			assert.True(t, files[want], "the README uses %s", want)
		}
		// docker build -t yourRepoName/edl-controller . builds the root
		// Dockerfile; cd example; docker build ... the example's.
		files["Dockerfile"], files["example/Dockerfile"] = true, true
		for f := range files {
			_, err := os.Stat(filepath.Join(root, f))
			assert.NoError(t, err, "the README uses %s", f)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		installCRD(t)
		ns := newNamespace(t)
		ctx := testContext(t)
		out, err := cp.Kubectl(ctx, "apply", "--dry-run=server", "-f", filepath.Join(root, "thirdpartyresource.yaml"))
		require.NoError(t, err)
		assert.Contains(t, out, "customresourcedefinition.apiextensions.k8s.io/trainingjobs.paddlepaddle.org")
		out, err = cp.Kubectl(ctx, "get", "crd", "trainingjobs.paddlepaddle.org")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^NAME\s+CREATED AT\ntrainingjobs\.paddlepaddle\.org\s`, out)
		out, err = cp.Kubectl(ctx, "apply", "--dry-run=server", "-f", filepath.Join(root, "example", "examplejob.yaml"), "-n", ns)
		require.NoError(t, err)
		assert.Contains(t, out, "trainingjob.paddlepaddle.org/example created (server dry run)")
		// The short name and the printer columns the README shows.
		job := exampleJob(t, ns)
		_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
		out, err = cp.Kubectl(ctx, "get", "tj", "-n", ns)
		require.NoError(t, err)
		assert.Regexp(t, `^NAME\s+PHASE\s+TRAINERS\s+MIN\s+MAX\s+AGE\nexample\s+\S*\s*\S*\s*2\s+6\s`, out)
	})
}

// headingAnchors returns the GitHub anchors of a markdown file's headings.
func headingAnchors(text string) map[string]bool {
	_, prose := parseMarkdown(text)
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(prose, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// TestDocsLinksResolve checks every relative link of README.md and
// docs/*.md: the file exists, and a #fragment into a markdown file names one
// of its headings.
func TestDocsLinksResolve(t *testing.T) {
	root := moduleRoot(t)
	linkRe := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, md := range markdownFiles(t) {
		text := readFile(t, md)
		_, prose := parseMarkdown(text)
		// Inline code is not a link.
		prose = regexp.MustCompile("`[^`\n]*`").ReplaceAllString(prose, "")
		for _, m := range linkRe.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			file := md
			if path != "" {
				file = filepath.Join(filepath.Dir(md), path)
			}
			checked++
			info, err := os.Stat(filepath.Join(root, file))
			if !assert.NoError(t, err, "%s links to %s", md, target) {
				continue
			}
			if fragment != "" && !info.IsDir() && strings.HasSuffix(file, ".md") {
				assert.True(t, headingAnchors(readFile(t, file))[fragment], "%s links to %s: no heading #%s in %s", md, target, fragment, file)
			}
		}
	}
	assert.Greater(t, checked, 10, "the docs link to each other")
}

// TestDocsLogMessagesExistInCode checks that every log message the docs
// quote (msg="..." or msg=word) is a string the code logs.
func TestDocsLogMessagesExistInCode(t *testing.T) {
	root := moduleRoot(t)
	var code strings.Builder
	for _, dir := range []string{"cmd", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "generated" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				code.Write(data)
			}
			return nil
		})
		require.NoError(t, err)
	}
	msgRe := regexp.MustCompile(`msg=(?:"([^"]+)"|([A-Za-z][\w.]*))`)
	var quoted []string
	for _, md := range markdownFiles(t) {
		for _, m := range msgRe.FindAllStringSubmatch(readFile(t, md), -1) {
			msg := m[1] + m[2]
			if !slices.Contains(quoted, msg) {
				quoted = append(quoted, msg)
			}
		}
	}
	for _, want := range []string{"starting the TrainingJob controller", "Cluster.InquiryResource done", "scaled trainers"} {
		assert.Contains(t, quoted, want, "the README shows the log line %q", want)
	}
	for _, msg := range quoted {
		assert.Contains(t, code.String(), goString(msg), "the docs quote the log message %q, which the code does not log", msg)
	}
}

// goString is msg as a Go string literal.
func goString(msg string) string {
	data, _ := json.Marshal(msg)
	return string(data)
}
