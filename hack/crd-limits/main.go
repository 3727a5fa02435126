// Command crd-limits bounds, in a CRD that controller-gen wrote, the length
// of the names in spec.volumes and spec.volumeMounts: they are core/v1 types,
// which take no markers, and the rule that every mount names a volume needs
// bounded names to fit the API server's CEL cost budget. A volume name is a
// DNS-1123 label, at most 63 characters, as the API server requires of a
// pod's volumes. It also leaves out the descriptions inside each role's pod
// template (spec.master.template, spec.pserver.template,
// spec.trainer.template): three copies of core/v1's PodTemplateSpec with
// their descriptions would more than double the CRD; their fields are
// core/v1's, documented there. A template's containers are optional: EDL
// makes the role's container when it gives none. It rewrites the file in
// place.
package main

import (
	"fmt"
	"os"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// maxNameLength is validation.DNS1123LabelMaxLength.
const maxNameLength = 63

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crd-limits <trainingjobs CRD file>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crd-limits:", err)
		os.Exit(1)
	}
}

func run(file string) error {
	data, err := os.ReadFile(file) // #nosec G304 G703 -- the file named on the command line
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("version %s has no schema", v.Name)
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return fmt.Errorf("version %s has no spec", v.Name)
		}
		for _, list := range []string{"volumes", "volumeMounts"} {
			l, ok := spec.Properties[list]
			if !ok || l.Items == nil || l.Items.Schema == nil {
				return fmt.Errorf("version %s: spec.%s is not a list", v.Name, list)
			}
			name, ok := l.Items.Schema.Properties["name"]
			if !ok {
				return fmt.Errorf("version %s: spec.%s[] has no name", v.Name, list)
			}
			n := int64(maxNameLength)
			name.MaxLength = &n
			l.Items.Schema.Properties["name"] = name
			spec.Properties[list] = l
		}
		for _, role := range []string{"master", "pserver", "trainer"} {
			r, ok := spec.Properties[role]
			if !ok {
				return fmt.Errorf("version %s has no spec.%s", v.Name, role)
			}
			t, ok := r.Properties["template"]
			if !ok {
				return fmt.Errorf("version %s has no spec.%s.template", v.Name, role)
			}
			for k, p := range t.Properties {
				undescribe(&p)
				t.Properties[k] = p
			}
			// A template may leave the containers to EDL (one that sets a
			// security context alone, say): EDL makes containers[0].
			ps := t.Properties["spec"]
			ps.Required = slices.DeleteFunc(ps.Required, func(f string) bool { return f == "containers" })
			t.Properties["spec"] = ps
			r.Properties["template"] = t
			spec.Properties[role] = r
		}
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	// Written as controller-gen writes it: a document marker, no status.
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crd)
	if err != nil {
		return err
	}
	delete(obj, "status")
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o600) // #nosec G703 -- the file named on the command line
}

// undescribe leaves out the descriptions of a schema and of every schema
// inside it.
func undescribe(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	for k, p := range s.Properties {
		undescribe(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		undescribe(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		undescribe(s.AdditionalProperties.Schema)
	}
	for _, all := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range all {
			undescribe(&all[i])
		}
	}
}
