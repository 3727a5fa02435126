package docs

import (
	"encoding/json"
	"fmt"
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

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/controller"
	"github.com/paddlepaddle/edl/test/framework"
)

// Run the documentation tests alone with
//
//	go test -count=1 ./test/docs/
//
// and the one that applies the docs' YAML to a real API server with
//
//	go test -count=1 -run TestDocs ./test/integration/

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
	files, err := MarkdownFiles(moduleRoot(t))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 4, "README.md and the docs")
	return files
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), rel))
	require.NoError(t, err)
	return string(data)
}

// edlBinary is framework.BuildEDL's edl binary.
func edlBinary(t *testing.T) string {
	t.Helper()
	bin, err := framework.BuildEDL()
	require.NoError(t, err)
	return bin
}

// exampleJobs returns ExampleJobs of the checkout: every TrainingJob of
// example/, parsed strictly.
func exampleJobs(t *testing.T) map[string]*v1.TrainingJob {
	t.Helper()
	jobs, err := ExampleJobs(moduleRoot(t))
	require.NoError(t, err)
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

	job := exampleJobs(t)["example/examplejob.yaml/example"]
	require.NotNil(t, job, "example/examplejob.yaml holds the job example")
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

// TestDocsFlagTableIsEDLsFlags compares docs/configuration.md's flag table
// with the flags the built binary has: the same set, and each default -help
// prints appears in its row.
func TestDocsFlagTableIsEDLsFlags(t *testing.T) {
	flags := edlFlags(t)
	readme := readFile(t, "docs/configuration.md")
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
		if !assert.True(t, ok, "docs/configuration.md's flag table has no row for -%s", name) {
			continue
		}
		if f.def != "" {
			assert.Contains(t, cell, "`"+f.def+"`", "docs/configuration.md's default of -%s", name)
		}
	}
	for name := range rows {
		assert.Contains(t, flags, name, "docs/configuration.md's flag table lists -%s, which edl does not have", name)
	}
}

// TestDocsCommandsRun runs the README's commands that can run without a
// cluster: the version of the built binary and `make -n` of every make
// target the README names, and it checks that the files the commands name
// exist. test/integration runs the kubectl commands that verify the CRD.
func TestDocsCommandsRun(t *testing.T) {
	root := moduleRoot(t)
	readme := readFile(t, "README.md")
	blocks, prose := ParseMarkdown(readme)

	t.Run("edl -version", func(t *testing.T) {
		out, err := exec.Command(edlBinary(t), "-version").Output()
		require.NoError(t, err)
		assert.Regexp(t, `^edl \S+\n$`, string(out))
	})

	// The commands of the README: the lines of its sh blocks and its inline
	// code spans.
	var commands []string
	for _, b := range blocks {
		if b.Lang() == "sh" || b.Lang() == "bash" || b.Lang() == "console" {
			for _, line := range strings.Split(b.Text, "\n") {
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
}

// headingAnchors returns the GitHub anchors of a markdown file's headings.
func headingAnchors(text string) map[string]bool {
	_, prose := ParseMarkdown(text)
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
		_, prose := ParseMarkdown(text)
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
