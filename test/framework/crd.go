package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ApplyCRD creates, or updates, every CustomResourceDefinition in the YAML
// file at path and waits until each is Established, that is served.
func (cp *ControlPlane) ApplyCRD(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var names []string
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := decoder.Decode(&crd); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("decode %s: %w", path, err)
		}
		if crd.Name == "" {
			continue // an empty document
		}
		if crd.Kind != "CustomResourceDefinition" {
			return fmt.Errorf("%s: %s %s is not a CustomResourceDefinition", path, crd.Kind, crd.Name)
		}
		_, err := crds.Create(ctx, &crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var existing *apiextensionsv1.CustomResourceDefinition
			existing, err = crds.Get(ctx, crd.Name, metav1.GetOptions{})
			if err == nil {
				crd.ResourceVersion = existing.ResourceVersion
				_, err = crds.Update(ctx, &crd, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("apply CRD %s from %s: %w", crd.Name, path, err)
		}
		names = append(names, crd.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("%s holds no CustomResourceDefinition", path)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
					return false, fmt.Errorf("names not accepted: %s", c.Message)
				}
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CRD %s to be established: %w", name, err)
		}
	}
	return nil
}
