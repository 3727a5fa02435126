// Command openapi-schema prints the OpenAPI (v2) definitions that openapi-gen
// generated for the TrainingJob API as one JSON document.
// hack/update-codegen.sh feeds it to applyconfiguration-gen, so that the
// generated fake clientset (fake.NewClientset) can track managed fields of
// TrainingJobs.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/paddlepaddle/edl/pkg/generated/openapi"
)

func main() {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	defs := openapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		schemas[name] = def.Schema
		// A type may embed a v2 form of its schema; the output is OpenAPI v2.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schemas[name] = v2
		}
	}
	doc := spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "EDL", Version: "v1"}},
		Definitions: schemas,
	}}
	if err := json.NewEncoder(os.Stdout).Encode(&doc); err != nil {
		fmt.Fprintf(os.Stderr, "openapi-schema: %v\n", err)
		os.Exit(1)
	}
}
