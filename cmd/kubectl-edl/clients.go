package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// clients are the connection to the cluster of the kubeconfig's context.
type clients struct {
	host string
	kube kubernetes.Interface
	tj   tjclient.Interface
}

// connect builds the clients from kubectl's flags and checks that the API
// server answers and serves TrainingJobs, so that either problem is one
// line.
func (r *root) connect(ctx context.Context) (*clients, error) {
	cfg, err := r.flags.ToRESTConfig()
	if err != nil {
		return nil, usagef("%v", err)
	}
	cfg.UserAgent = "kubectl-edl/" + version
	c := &clients{host: cfg.Host}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.tj, err = tjclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if _, err := c.kube.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("cannot reach the API server at %s: %w", c.host, err)
	}
	if _, err := c.kube.Discovery().ServerResourcesForGroupVersion(v1.SchemeGroupVersion.String()); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the API server at %s does not serve %s TrainingJobs: is EDL installed (kubectl apply -k)?", c.host, v1.SchemeGroupVersion)
		}
		return nil, fmt.Errorf("discover %s on the API server at %s: %w", v1.SchemeGroupVersion, c.host, err)
	}
	return c, nil
}

// namespace is -n, else the context's namespace; "" with all (-A).
func (r *root) namespace(all bool) (string, error) {
	if all {
		return "", nil
	}
	ns, _, err := r.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", usagef("%v", err)
	}
	return ns, nil
}

// open resolves the namespace (-n, the context's, or "" with all), connects,
// and checks that the namespace exists: what every command does first.
func (r *root) open(ctx context.Context, all bool) (string, *clients, error) {
	ns, err := r.namespace(all)
	if err != nil {
		return "", nil, err
	}
	c, err := r.connect(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := c.checkNamespace(ctx, ns); err != nil {
		return "", nil, err
	}
	return ns, c, nil
}

// checkNamespace fails with one line when ns does not exist. A user who may
// not read namespaces is not stopped: what is listed tells.
func (c *clients) checkNamespace(ctx context.Context, ns string) error {
	if ns == "" {
		return nil
	}
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return usagef("namespace %q not found", ns)
	}
	return nil
}
