// Package v1 is version v1 of the paddlepaddle.org API: the TrainingJob
// resource that describes an elastic, distributed PaddlePaddle training job.
//
// The YAML keys of the spec are those of the original EDL controller
// (hyphenated "min-instance", snake_case "ports_num", ...), so job files
// written for it apply unchanged.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +groupName=paddlepaddle.org
// +kubebuilder:object:generate=false
package v1
