package kubeflow

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// The kind Convert reads.
const (
	APIVersion = "kubeflow.org/v1"
	Kind       = "PyTorchJob"
)

// Job is one PyTorchJob converted: the TrainingJob, and a note on each
// field of the input that it does not carry as written.
type Job struct {
	TrainingJob *v1.TrainingJob
	Notes       []Note
}

// ConvertYAML converts each YAML document of data, every one a
// kubeflow.org/v1 PyTorchJob. A document that is not one, or that cannot
// be read, is an error naming it, and nothing is converted.
func ConvertYAML(data []byte) ([]Job, error) {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var jobs []Job
	for n := 1; ; n++ { // n counts the documents as --- separates them
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return jobs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		// Strict: of a key given twice, one value would be lost without a word.
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		var obj any
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if obj == nil { // only comments, or an empty document
			continue
		}
		m, ok := obj.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d is not an object, so not a %s %s", n, APIVersion, Kind)
		}
		job, err := Convert(m)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		jobs = append(jobs, *job)
	}
}

// Convert converts one PyTorchJob decoded into a map, as ConvertYAML or
// sigs.k8s.io/yaml decodes it. The TrainingJob is written without EDL's
// defaults.
func Convert(doc map[string]any) (*Job, error) {
	r := &reader{}
	root := r.open(nil, doc)
	apiVersion, _, _ := str(root, "apiVersion")
	kind, _, _ := str(root, "kind")
	if apiVersion != APIVersion || kind != Kind {
		if apiVersion == "" && kind == "" {
			return nil, fmt.Errorf("no apiVersion and kind: not a %s %s", APIVersion, Kind)
		}
		return nil, fmt.Errorf("a %s %s, not a %s %s", apiVersion, kind, APIVersion, Kind)
	}
	c := &converter{reader: r, job: &v1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "TrainingJob"},
		Spec:     v1.TrainingJobSpec{Framework: v1.FrameworkPyTorch},
	}}
	if err := c.metadata(root); err != nil {
		return nil, err
	}
	if err := c.spec(root); err != nil {
		return nil, err
	}
	r.dropField(root, "status", "a TrainingJob's status is written by EDL's controller")
	return &Job{TrainingJob: c.job, Notes: r.rest()}, nil
}

// converter builds a TrainingJob from what its reader reads.
type converter struct {
	*reader
	job *v1.TrainingJob
	// lineProcs is the --nproc-per-node of the trainers' torchrun line,
	// which nprocs carries when the spec gives no number of its own.
	lineProcs *procsGiven
}

// lastApplied is the annotation in which kubectl apply records an object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// serverSet is why the metadata the API server writes is not carried.
const serverSet = "the API server sets it for the new TrainingJob"

// metadataDropped are the fields of metadata that are the PyTorchJob's own.
var metadataDropped = map[string]string{
	"uid": serverSet, "resourceVersion": serverSet, "generation": serverSet, "creationTimestamp": serverSet,
	"deletionTimestamp": serverSet, "deletionGracePeriodSeconds": serverSet, "selfLink": serverSet, "managedFields": serverSet,
	"ownerReferences": "the PyTorchJob's owners do not own the TrainingJob",
	"finalizers":      "they are for the PyTorchJob's controllers",
	"generateName":    "the TrainingJob is named by metadata.name",
}

// metadata carries the name, namespace, labels and annotations.
func (c *converter) metadata(root *object) error {
	meta, err := c.child(root, "metadata")
	if err != nil {
		return err
	}
	if meta == nil {
		return errors.New("metadata.name: required: the TrainingJob takes the PyTorchJob's name")
	}
	name, ok, err := str(meta, "name")
	switch {
	case err != nil:
		return err
	case !ok || name == "":
		return errors.New("metadata.name: required: the TrainingJob takes the PyTorchJob's name")
	case len(name) > v1.MaxNameLength || len(validation.IsDNS1035Label(name)) > 0:
		c.note(meta.path.Child("name"), fmt.Sprintf("rename the job before applying: EDL's job names are DNS-1035 labels of at most %d characters, as the names of its Services derive from them", v1.MaxNameLength))
	}
	j := c.job
	j.Name = name
	if j.Namespace, _, err = str(meta, "namespace"); err != nil {
		return err
	}
	if j.Labels, err = stringMap(meta, "labels"); err != nil {
		return err
	}
	if j.Annotations, err = stringMap(meta, "annotations"); err != nil {
		return err
	}
	if _, ok := j.Annotations[lastApplied]; ok {
		delete(j.Annotations, lastApplied)
		c.drop(meta.path.Child("annotations").Key(lastApplied), "it is kubectl's record of the PyTorchJob")
	}
	for key, why := range metadataDropped {
		c.dropField(meta, key, why)
	}
	return nil
}

// restartWhy is why no restart policy is carried.
const restartWhy = "EDL's trainers restart always, and a failure counts against spec.elasticPolicy.maxRestarts"

// spec maps the replicas, the elastic policy and the run policy.
func (c *converter) spec(root *object) error {
	spec, err := c.child(root, "spec")
	if err != nil {
		return err
	}
	if spec == nil {
		return errors.New("spec: required")
	}
	total, err := c.replicas(spec)
	if err != nil {
		return err
	}
	ep, err := c.child(spec, "elasticPolicy")
	if err != nil {
		return err
	}
	policy := &v1.ElasticPolicy{}
	if err := c.size(ep, total); err != nil {
		return err
	}
	if err := c.elastic(ep, policy); err != nil {
		return err
	}
	if err := c.nprocs(spec, ep, policy); err != nil {
		return err
	}
	if err := c.runPolicy(spec, policy); err != nil {
		return err
	}
	if !reflect.ValueOf(*policy).IsZero() {
		c.job.Spec.ElasticPolicy = policy
	}
	return nil
}

// replicas reads the Master and Worker replica specs: the Worker's pod
// template (else the Master's) becomes the trainers', and it returns their
// replicas together.
func (c *converter) replicas(spec *object) (int32, error) {
	specs, err := c.child(spec, "pytorchReplicaSpecs")
	if err != nil {
		return 0, err
	}
	if specs == nil {
		return 0, errors.New("spec.pytorchReplicaSpecs: required: the replicas to run")
	}
	// Kubeflow reads the replica types in any case; "Master" sorts first.
	var master, worker *object
	keys := make([]string, 0, len(specs.m))
	for k := range specs.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		into := map[string]**object{"master": &master, "worker": &worker}[strings.ToLower(k)]
		if into == nil || *into != nil {
			continue // not a replica type, or one given twice: left over
		}
		if *into, err = c.child(specs, k); err != nil {
			return 0, err
		}
	}
	if master == nil && worker == nil {
		return 0, errors.New("spec.pytorchReplicaSpecs: no Master or Worker: nothing to run")
	}
	var total int32
	for _, rs := range []*object{master, worker} {
		if rs == nil {
			continue
		}
		n, ok, err := integer(rs, "replicas")
		switch {
		case err != nil:
			return 0, err
		case !ok:
			n = 1 // Kubeflow's default
		case n < 0:
			return 0, fmt.Errorf("%s: want 0 or more, not %d", rs.path.Child("replicas"), n)
		}
		total += n
		c.dropField(rs, "restartPolicy", restartWhy)
	}
	trainers := worker
	if trainers == nil {
		trainers = master
	}
	template, ok := trainers.take("template")
	if !ok {
		return 0, fmt.Errorf("%s: required: the trainers' pod", trainers.path.Child("template"))
	}
	if master != nil && worker != nil {
		if other, ok := master.take("template"); ok && !reflect.DeepEqual(other, template) {
			c.drop(master.path.Child("template"), "it differs from the Worker's, and every trainer runs the Worker's")
		}
	}
	return total, c.template(trainers.path.Child("template"), template)
}
