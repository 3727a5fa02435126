package kubeflow

import (
	"encoding/json"

	"sigs.k8s.io/yaml"
)

// YAML is the TrainingJob as `kubectl apply` takes it: without a status,
// and without the nulls and empty objects that Go's types write where the
// input had nothing.
func (j *Job) YAML() ([]byte, error) {
	data, err := json.Marshal(j.TrainingJob)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	prune(obj)
	return yaml.Marshal(obj)
}

// emptyMeansNothing are the keys whose empty object Go's types write for a
// zero struct: metadata's creationTimestamp alone (a null), resources,
// spec.master. An empty object elsewhere, emptyDir: {}, means something.
var emptyMeansNothing = map[string]bool{"metadata": true, "resources": true, "master": true}

// prune removes the nulls, then the empty objects of emptyMeansNothing,
// from a decoded JSON value.
func prune(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			prune(child)
			if m, isMap := child.(map[string]any); child == nil || isMap && len(m) == 0 && emptyMeansNothing[k] {
				delete(x, k)
			}
		}
	case []any:
		for _, child := range x {
			prune(child)
		}
	}
}
