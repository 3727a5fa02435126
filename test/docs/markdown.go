// Package docs checks that what README.md, docs/*.md and example/ say is
// true of the code: the flags, the make targets, the files and links they
// name, the log lines they quote, the example jobs. Its tests read text and
// run the built edl binary; they need no control plane. The part that needs
// one, applying the docs' YAML to a real API server, is in test/integration
// and uses this package's parsers.
package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// MarkdownFiles returns README.md and docs/*.md of the checkout at root,
// relative to it.
func MarkdownFiles(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	return files, nil
}

// CodeBlock is one fenced code block of a markdown file.
type CodeBlock struct {
	Info string // the info string after the opening fence: "yaml", "sh", ...
	Line int    // line of the opening fence, from 1
	Text string
}

// Lang is the block's language: the first word of its info string.
func (b CodeBlock) Lang() string {
	if f := strings.Fields(b.Info); len(f) > 0 {
		return f[0]
	}
	return ""
}

// ParseMarkdown splits a markdown text into its fenced code blocks and its
// prose (everything outside them).
func ParseMarkdown(text string) (blocks []CodeBlock, prose string) {
	var out strings.Builder
	var cur *CodeBlock
	var body strings.Builder
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				cur = &CodeBlock{Info: strings.TrimSpace(trimmed[3:]), Line: i + 1}
				body.Reset()
				continue
			}
			out.WriteString(line)
			out.WriteByte('\n')
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(trimmed[3:]) == "" {
			cur.Text = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	return blocks, out.String()
}

// YAMLDocuments splits a YAML stream into its documents, skipping empty ones
// and ones of comments only.
func YAMLDocuments(data string) ([]map[string]any, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(data)))
	var docs []map[string]any
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("%w; YAML document:\n%s", err, doc)
		}
		if obj == nil { // only comments
			continue
		}
		docs = append(docs, obj)
	}
}

// YAMLSource is a file or code block of Kubernetes objects.
type YAMLSource struct {
	Name string // example/<file>, or <markdown file>:<line>
	Text string
}

// YAMLSources returns every YAML file of example/ and every yaml code block
// of README.md and docs/*.md that holds an apiVersion. A block that is
// deliberately not a complete object (a fragment, an excerpt with
// placeholders) opts out by adding no-apply to its info string:
// "```yaml no-apply".
func YAMLSources(root string) (examples, blocks []YAMLSource, err error) {
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		files, err := filepath.Glob(filepath.Join(root, "example", pattern))
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			examples = append(examples, YAMLSource{Name: "example/" + filepath.Base(f), Text: string(data)})
		}
	}
	mds, err := MarkdownFiles(root)
	if err != nil {
		return nil, nil, err
	}
	for _, md := range mds {
		data, err := os.ReadFile(filepath.Join(root, md))
		if err != nil {
			return nil, nil, err
		}
		parsed, _ := ParseMarkdown(string(data))
		for _, b := range parsed {
			if (b.Lang() != "yaml" && b.Lang() != "yml") || strings.Contains(b.Info, "no-apply") ||
				!strings.Contains(b.Text, "apiVersion:") {
				continue
			}
			blocks = append(blocks, YAMLSource{Name: fmt.Sprintf("%s:%d", md, b.Line), Text: b.Text})
		}
	}
	return examples, blocks, nil
}

// ExampleJobs parses every TrainingJob of example/ strictly, as kubectl's
// strict field validation would, keyed by example/<file>/<job name>.
func ExampleJobs(root string) (map[string]*v1.TrainingJob, error) {
	examples, _, err := YAMLSources(root)
	if err != nil {
		return nil, err
	}
	jobs := map[string]*v1.TrainingJob{}
	for _, src := range examples {
		objs, err := YAMLDocuments(src.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.Name, err)
		}
		for _, obj := range objs {
			if obj["kind"] != "TrainingJob" {
				continue
			}
			data, err := json.Marshal(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src.Name, err)
			}
			job := &v1.TrainingJob{}
			if err := yaml.UnmarshalStrict(data, job); err != nil {
				return nil, fmt.Errorf("%s: %w", src.Name, err)
			}
			jobs[src.Name+"/"+job.Name] = job
		}
	}
	return jobs, nil
}
