package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/util/retry"
)

// LeaseName is the Lease the replicas of edl compete for.
const LeaseName = "edl-controller"

// The annotations the leader sets on its Lease.
const (
	// AnnotationConfiguration holds the configuration the leader runs
	// with, every field filled in, as JSON.
	AnnotationConfiguration = Group + "/configuration"
	// AnnotationLeader is the identity of the replica that published it,
	// to compare with the Lease's holderIdentity.
	AnnotationLeader = Group + "/leader"
	// AnnotationVersion is the version of the edl binary that published it.
	AnnotationVersion = Group + "/version"
)

// Publication is what a leader published on the Lease.
type Publication struct {
	// Lease is "namespace/name".
	Lease string
	// Configuration is the leader's configuration, every field set.
	Configuration *EDLConfiguration
	// Leader is the identity that published it, Holder the Lease's
	// holderIdentity now, Version the publishing binary's version.
	Leader, Holder, Version string
}

// Current says whether the replica that published the configuration still
// holds the Lease.
func (p *Publication) Current() bool { return p.Leader != "" && p.Leader == p.Holder }

// Publish writes c, identity and version as annotations of the Lease
// namespace/LeaseName, which must exist, keeping everything else of it. It
// retries when the elector's renewal wrote in between.
func Publish(ctx context.Context, leases coordinationv1.LeasesGetter, namespace, identity, version string, c *EDLConfiguration) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		lease, err := leases.Leases(namespace).Get(ctx, LeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[AnnotationConfiguration] = string(data)
		lease.Annotations[AnnotationLeader] = identity
		lease.Annotations[AnnotationVersion] = version
		_, err = leases.Leases(namespace).Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("publish the configuration on the Lease %s/%s: %w", namespace, LeaseName, err)
	}
	return nil
}

// ErrNotPublished says that no running controller's configuration could be
// found; its message says why, in one line.
var ErrNotPublished = errors.New("the controller's configuration is not published")

type notPublished struct{ msg string }

func (e *notPublished) Error() string        { return e.msg }
func (e *notPublished) Is(target error) bool { return target == ErrNotPublished }

// Published reads the configuration a leader published on the Lease
// namespace/LeaseName. When there is none — no Lease, no annotation, not
// allowed to read it — the error is ErrNotPublished and says why.
func Published(ctx context.Context, leases coordinationv1.LeasesGetter, namespace string) (*Publication, error) {
	key := namespace + "/" + LeaseName
	lease, err := leases.Leases(namespace).Get(ctx, LeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, &notPublished{fmt.Sprintf("no Lease %s: no edl controller runs with leader election in namespace %s", key, namespace)}
	case apierrors.IsForbidden(err):
		return nil, &notPublished{fmt.Sprintf("not allowed to read the Lease %s, where the controller publishes its configuration: grant get on leases in namespace %s", key, namespace)}
	case err != nil:
		return nil, fmt.Errorf("read the Lease %s: %w", key, err)
	}
	p := &Publication{Lease: key, Leader: lease.Annotations[AnnotationLeader], Version: lease.Annotations[AnnotationVersion]}
	if lease.Spec.HolderIdentity != nil {
		p.Holder = *lease.Spec.HolderIdentity
	}
	raw, ok := lease.Annotations[AnnotationConfiguration]
	if !ok {
		return nil, &notPublished{fmt.Sprintf("the Lease %s has no annotation %s: its holder %q publishes no configuration (an edl that predates it)", key, AnnotationConfiguration, p.Holder)}
	}
	c, err := Decode([]byte(raw))
	if err != nil {
		return nil, &notPublished{fmt.Sprintf("the annotation %s of the Lease %s: %v", AnnotationConfiguration, key, err)}
	}
	p.Configuration = Merge(Default(), c)
	return p, nil
}
