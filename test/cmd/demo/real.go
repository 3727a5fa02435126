package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// realJob is the demo's job on the real node (-real-node).
const realJob = "real"

// kwokToleration lets a pod onto the kwok nodes beside a real node, which
// carry kwok's taint so that what must really run lands on the real node.
var kwokToleration = corev1.Toleration{
	Key: framework.KwokTaint.Key, Operator: corev1.TolerationOpEqual,
	Value: framework.KwokTaint.Value, Effect: framework.KwokTaint.Effect,
}

// offRealNode keeps a pod off the real node: the phantom jobs' and web
// pods' images are not on it, and a pod there would never start.
var offRealNode = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
	RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: framework.RealNodeLabel, Operator: corev1.NodeSelectorOpDoesNotExist}},
	}}},
}}

// onKwok puts a job's pods on the kwok nodes beside a real node: it
// tolerates their taint and keeps off the real node.
func onKwok(job *v1.TrainingJob) {
	job.Spec.Tolerations = append(job.Spec.Tolerations, kwokToleration)
	job.Spec.Affinity = offRealNode
}

// createTolerating creates the TrainingJob of a file on the kwok nodes
// (onKwok): the example job's pods are phantoms there.
func createTolerating(ctx context.Context, tj tjclient.Interface, path string) error {
	data, err := os.ReadFile(path) // #nosec G304 -- the repository's example
	if err != nil {
		return err
	}
	job := &v1.TrainingJob{}
	if err := yaml.UnmarshalStrict(data, job); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	onKwok(job)
	fmt.Printf("$ kubectl create -f %s   # on the kwok nodes: tolerating their taint, off the real node\n", path)
	if _, err := tj.PaddlepaddleV1().TrainingJobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("submit %s: %w", job.Name, err)
	}
	return nil
}

// submitReal submits a fault-tolerant job whose pods run as processes on
// the real node: the example trainer image, whose paddle_k8s launcher
// serves the master's and pserver's ports and keeps the trainers working
// until they are stopped.
func submitReal(ctx context.Context, tj tjclient.Interface, root string) error {
	version, err := os.ReadFile(root + "/VERSION")
	if err != nil {
		return err
	}
	small := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
	}}
	job := &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: realJob},
		Spec: v1.TrainingJobSpec{
			Image:         "paddlepaddle/edl-torch-example:" + strings.TrimSpace(string(version)),
			FaultTolerant: true,
			NodeSelector:  map[string]string{framework.RealNodeLabel: "true"},
			Master:        v1.MasterSpec{Resources: small},
			Pserver:       v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: small},
			Trainer:       v1.TrainerSpec{Entrypoint: "python3 train.py", MinInstance: 1, MaxInstance: 4, Resources: small},
		},
	}
	if _, err := tj.PaddlepaddleV1().TrainingJobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("submit %s: %w", realJob, err)
	}
	fmt.Printf("trainingjob.paddlepaddle.org/%s created (pods as processes on %s; trainers 200m CPU, 1..4)\n", realJob, framework.RealNodeName)
	return nil
}
