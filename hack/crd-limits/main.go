// Command crd-limits bounds, in a CRD that controller-gen wrote, the length
// of the names in spec.volumes and spec.volumeMounts: they are core/v1 types,
// which take no markers, and the rule that every mount names a volume needs
// bounded names to fit the API server's CEL cost budget. A volume name is a
// DNS-1123 label, at most 63 characters, as the API server requires of a
// pod's volumes. It rewrites the file in place.
package main

import (
	"fmt"
	"os"

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
