package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/jsonpath"
)

// outputFlag is -o for a command that prints a table, a wide table, JSON,
// YAML, the jobs' names or a template of the JSON.
func outputFlag(cmd *cobra.Command, into *string) {
	cmd.Flags().StringVarP(into, "output", "o", "",
		"output format: wide, json, yaml, name, jsonpath=TEMPLATE or go-template=TEMPLATE (default: a table); the templates read what -o json prints")
}

func checkOutput(o string) error {
	switch {
	case o == "" || o == "wide" || o == "json" || o == "yaml" || o == "name":
		return nil
	case strings.HasPrefix(o, "jsonpath=") || strings.HasPrefix(o, "go-template="):
		_, err := parseTemplate(o)
		return err
	}
	return usagef("unknown output format %q: use wide, json, yaml, name, jsonpath=... or go-template=...", o)
}

// executor runs a parsed -o template on a decoded JSON document.
type executor func(w io.Writer, data any) error

// parseTemplate parses -o jsonpath=T or go-template=T, as kubectl reads
// them: a JSONPath without braces is taken whole, as {T}.
func parseTemplate(o string) (executor, error) {
	if t, ok := strings.CutPrefix(o, "jsonpath="); ok {
		if !strings.Contains(t, "{") {
			t = "{" + t + "}"
		}
		p := jsonpath.New("output")
		if err := p.Parse(t); err != nil {
			return nil, usagef("invalid -o jsonpath: %v", err)
		}
		return p.Execute, nil
	}
	t, _ := strings.CutPrefix(o, "go-template=")
	tmpl, err := template.New("output").Option("missingkey=error").Parse(t)
	if err != nil {
		return nil, usagef("invalid -o go-template: %v", err)
	}
	return func(w io.Writer, data any) error { return tmpl.Execute(w, data) }, nil
}

// printTemplated prints doc, what -o json prints, for -o name (the jobs'
// names, as kubectl names objects), jsonpath= and go-template=; it says
// whether output was one of them.
func printTemplated(w io.Writer, output string, doc any) (bool, error) {
	if output != "name" && !strings.HasPrefix(output, "jsonpath=") && !strings.HasPrefix(output, "go-template=") {
		return false, nil
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return true, err
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return true, err
	}
	if output == "name" {
		jobs, _ := data["jobs"].([]any)
		for _, j := range jobs {
			if job, ok := j.(map[string]any); ok {
				fmt.Fprintf(w, "trainingjob.paddlepaddle.org/%v\n", job["name"])
			}
		}
		return true, nil
	}
	execute, err := parseTemplate(output)
	if err != nil {
		return true, err
	}
	if err := execute(w, data); err != nil {
		return true, fmt.Errorf("-o %s: %w", output, err)
	}
	return true, nil
}
