package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads the configuration file at path; every problem is one line
// that names the file and the field.
func Load(path string) (*EDLConfiguration, error) {
	data, err := os.ReadFile(path) // #nosec G304 -- the file the operator named
	if err != nil {
		return nil, fmt.Errorf("cannot read the config file: %w", err)
	}
	c, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, nil
}

// Decode reads an EDLConfiguration from YAML or JSON, strictly: the
// apiVersion and kind must be this package's, and an unknown or repeated
// field, or a value of the wrong type, is an error naming the field.
func Decode(data []byte) (*EDLConfiguration, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %s", oneLine(err))
	}
	var raw map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &raw); err != nil || raw == nil {
		return nil, errors.New("not a YAML object with apiVersion and kind")
	}
	if v, _ := raw["apiVersion"].(string); v != APIVersion {
		return nil, fmt.Errorf("apiVersion: must be %s, not %q", APIVersion, fmt.Sprint(raw["apiVersion"]))
	}
	if k, _ := raw["kind"].(string); k != Kind {
		return nil, fmt.Errorf("kind: must be %s, not %q", Kind, fmt.Sprint(raw["kind"]))
	}
	// Durations first: their parse errors do not say which field.
	for _, f := range Fields {
		if !f.duration {
			continue
		}
		v, ok := lookup(raw, f.Path)
		if !ok || v == nil {
			continue
		}
		s, isString := v.(string)
		if !isString {
			return nil, fmt.Errorf("%s: must be a duration such as \"5s\", not %v", f.Path, v)
		}
		if err := f.Set(&EDLConfiguration{}, s); err != nil {
			return nil, err
		}
	}
	c := &EDLConfiguration{}
	strict, err := sigsjson.UnmarshalStrict(js, c, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, errors.New(typeError(err))
	}
	if len(strict) > 0 {
		return nil, errors.New(oneLine(strict[0]))
	}
	return c, nil
}

// lookup returns the value at a dotted path of a decoded JSON object.
func lookup(raw map[string]any, path string) (any, bool) {
	parts := strings.Split(path, ".")
	cur := raw
	for i, p := range parts {
		v, ok := cur[p]
		if !ok {
			return nil, false
		}
		if i == len(parts)-1 {
			return v, true
		}
		if cur, ok = v.(map[string]any); !ok {
			return nil, false
		}
	}
	return nil, false
}

// goField matches the "Go struct field Type.path.to.field" of encoding/json's
// type errors.
var goField = regexp.MustCompile(`json: cannot unmarshal (.+?) into Go struct field \w+\.(\S+) of type (\S+)`)

// typeError rewrites a JSON type error as "path: must be a T, not a V".
func typeError(err error) string {
	m := goField.FindStringSubmatch(err.Error())
	if m == nil {
		return oneLine(err)
	}
	want := map[string]string{"float64": "a number", "int": "an integer", "bool": "true or false", "string": "a string",
		"[]string": "a list of strings"}[m[3]]
	if want == "" {
		want = "an object"
	}
	got := m[1]
	if n, ok := strings.CutPrefix(got, "number "); ok {
		got = n // "number 2.5": the value says it
	} else if strings.ContainsAny(got[:1], "aeiou") {
		got = "an " + got
	} else {
		got = "a " + got
	}
	return fmt.Sprintf("%s: must be %s, not %s", m[2], want, got)
}

// oneLine joins the lines of err's message.
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}
