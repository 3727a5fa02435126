package controller

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/progress"
)

// EnvProgressConfigMap names, in every container of a job, the ConfigMap
// its training writes its progress into (edl_progress.py reads it).
const EnvProgressConfigMap = "EDL_PROGRESS_CONFIGMAP"

// The progress contract's objects, each controlled by the job: the
// ConfigMap the training writes, the service account its trainer pods run
// as, and a Role, bound to that account alone, that may get and patch that
// one ConfigMap. A job's trainers can write their own progress and nothing
// else: no other job's, and nothing cluster-wide.

// ProgressConfigMap is the job's progress ConfigMap, empty until the
// training reports. It carries the master label, as the job's other
// objects beside its pods do, so that edl's filtered ConfigMap informer
// holds it.
func ProgressConfigMap(job *v1.TrainingJob) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: progressMeta(job, v1.ProgressConfigMapName(job.Name))}
}

// ProgressServiceAccount is the service account of the job's trainers.
func ProgressServiceAccount(job *v1.TrainingJob) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: progressMeta(job, v1.ProgressServiceAccountName(job.Name))}
}

// ProgressRole may get and patch the job's progress ConfigMap alone.
func ProgressRole(job *v1.TrainingJob) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: progressMeta(job, v1.ProgressConfigMapName(job.Name)),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			ResourceNames: []string{v1.ProgressConfigMapName(job.Name)},
			Verbs:         []string{"get", "patch"},
		}},
	}
}

// TrainerAccount is the service account the job's trainers run as: their
// template's, or the job's own progress account.
func TrainerAccount(job *v1.TrainingJob) string {
	if t := job.Spec.Trainer.Template; t != nil && t.Spec.ServiceAccountName != "" {
		return t.Spec.ServiceAccountName
	}
	return v1.ProgressServiceAccountName(job.Name)
}

// ProgressRoleBinding binds ProgressRole to the job's trainers' account
// (TrainerAccount).
func ProgressRoleBinding(job *v1.TrainingJob) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: progressMeta(job, v1.ProgressConfigMapName(job.Name)),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: v1.ProgressConfigMapName(job.Name)},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Namespace: job.Namespace, Name: TrainerAccount(job),
		}},
	}
}

// bindTrainerAccount binds ProgressRole to the account a changed trainer
// template names, before the trainer ReplicaSet's new pods run as it, so
// that their reports are not refused. The binding is named after the
// account (ProgressRoleBinding's name and a hash of it): one made before
// for the same account is left as it is, and the bindings of earlier
// accounts stay, as the job's, until the job is deleted.
func (c *Controller) bindTrainerAccount(ctx context.Context, job *v1.TrainingJob) error {
	b := ProgressRoleBinding(job)
	account := b.Subjects[0].Name
	h := fnv.New32a()
	_, _ = h.Write([]byte(account))
	b.Name = fmt.Sprintf("%s-%08x", b.Name, h.Sum32())
	_, err := c.kubeClient.RbacV1().RoleBindings(job.Namespace).Create(ctx, b, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("bind the progress Role of %s/%s to service account %s: %w", job.Namespace, job.Name, account, err)
	}
	c.log.Info("bound the progress contract to the trainers' new account", "job", job.Namespace+"/"+job.Name, "serviceaccount", account)
	c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created RoleBinding %s: the trainers' new service account %s may write the training's progress", b.Name, account)
	return nil
}

func progressMeta(job *v1.TrainingJob, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       job.Namespace,
		Labels:          map[string]string{v1.LabelMaster: job.Name},
		OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
	}
}

// ensureProgress creates the job's progress contract when its ConfigMap is
// missing: the account, the Role and its binding first (each may exist
// from a sync that stopped half-way), then the ConfigMap, whose event
// brings the job back. The trainers' ReplicaSet needs the account: a pod
// that names a missing one is refused.
func (c *Controller) ensureProgress(ctx context.Context, job *v1.TrainingJob) error {
	want := ProgressConfigMap(job)
	existing, err := c.configMaps.ConfigMaps(job.Namespace).Get(want.Name)
	switch {
	case err == nil && !controlledBy(existing, job):
		return fmt.Errorf("ConfigMap %s is in the way: the job %s/%s does not control it", want.Name, job.Namespace, job.Name)
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	ns := job.Namespace
	creates := []struct {
		kind   string
		create func() error
	}{
		{"ServiceAccount", func() error {
			_, err := c.kubeClient.CoreV1().ServiceAccounts(ns).Create(ctx, ProgressServiceAccount(job), metav1.CreateOptions{})
			return err
		}},
		{"Role", func() error {
			_, err := c.kubeClient.RbacV1().Roles(ns).Create(ctx, ProgressRole(job), metav1.CreateOptions{})
			return err
		}},
		{"RoleBinding", func() error {
			_, err := c.kubeClient.RbacV1().RoleBindings(ns).Create(ctx, ProgressRoleBinding(job), metav1.CreateOptions{})
			return err
		}},
		{"ConfigMap", func() error {
			_, err := c.kubeClient.CoreV1().ConfigMaps(ns).Create(ctx, want, metav1.CreateOptions{})
			return err
		}},
	}
	created := false
	for _, o := range creates {
		err := o.create()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the progress contract's %s of %s/%s: %w", o.kind, ns, job.Name, err)
		}
		created = err == nil // the ConfigMap's, last
	}
	if !created {
		// The cache is behind, or the ConfigMap lost the label edl's
		// informer selects it by (its trainers may patch it): nothing to
		// announce again.
		return nil
	}
	c.log.Info("created the progress contract", "job", ns+"/"+job.Name, "configmap", want.Name)
	c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created ConfigMap %s for the training's progress, writable by service account %s alone",
		want.Name, TrainerAccount(job))
	return nil
}

// observeProgress reads the job's progress ConfigMap into obs, when the
// job controls one.
func (c *Controller) observeProgress(job *v1.TrainingJob, obs *observed) error {
	cm, err := c.configMaps.ConfigMaps(job.Namespace).Get(v1.ProgressConfigMapName(job.Name))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case controlledBy(cm, job):
		obs.progress = cm.Data
	}
	return nil
}

// progressStatus is the job's status.progress after the report its
// ConfigMap holds ([progress.Advance]); a report that cannot be read
// keeps what was known, with the error naming the key. It is pure.
func progressStatus(job *v1.TrainingJob, obs observed) *v1.ProgressStatus {
	prev := job.Status.Progress
	r, ok, err := progress.Parse(obs.progress)
	if err != nil {
		s := &v1.ProgressStatus{}
		if prev != nil {
			s = prev.DeepCopy()
		}
		s.Error = err.Error()
		return s
	}
	if !ok {
		return prev
	}
	return progress.Advance(prev, r, trainerSize(obs))
}

// trainerSize is the size of the job's running trainers: how many, on how
// many nodes, and how many the ReplicaSet asks for.
func trainerSize(obs observed) progress.Size {
	nodes := sets.New[string]()
	var running int32
	for _, p := range obs.pods[v1.RoleTrainer] {
		if isRunning(p) && p.DeletionTimestamp == nil {
			running++
			nodes.Insert(p.NodeName)
		}
	}
	size := progress.Size{Trainers: running, Nodes: int32(min(nodes.Len(), math.MaxInt32))} // #nosec G115 -- clamped to MaxInt32
	if rs := obs.replicaSets[v1.RoleTrainer]; rs != nil && rs.Spec.Replicas != nil {
		size.Desired = *rs.Spec.Replicas
	}
	return size
}
