package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// SharedVolumesDir is where the real node's shared volumes live on this
// machine, one directory per claim.
const SharedVolumesDir = realNodeVar + "/volumes"

// SharedVolume is the storage the local cluster gives a claim that its
// pods share (example/torchjob.yaml's torch-checkpoints): a
// PersistentVolume of the real node's disk, ReadWriteMany, bound ahead to
// namespace/claim and to the real node, so that the pods mounting the
// claim run there. It returns the volume's directory on this machine.
// Creating it again is a no-op; DeleteSharedVolume removes it.
func (cp *ControlPlane) SharedVolume(ctx context.Context, namespace, claim string) (string, error) {
	dir := filepath.Join(SharedVolumesDir, namespace, claim)
	if err := os.MkdirAll(dir, 0o777); err != nil { // #nosec G301 -- the trainers' user writes it
		return "", err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // #nosec G302 -- as above, past the umask
		return "", err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: sharedVolumeName(namespace, claim)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			// No class: a claim that names none binds to it where the
			// cluster has no default class, as the local cluster has not.
			StorageClassName: "",
			ClaimRef:         &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{RealNodeName}}},
			}}}},
		},
	}
	_, err := cp.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create the shared volume of %s/%s: %w", namespace, claim, err)
	}
	return dir, nil
}

// DeleteSharedVolume deletes SharedVolume's PersistentVolume and directory.
func (cp *ControlPlane) DeleteSharedVolume(ctx context.Context, namespace, claim string) error {
	err := cp.Client.CoreV1().PersistentVolumes().Delete(ctx, sharedVolumeName(namespace, claim), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return os.RemoveAll(filepath.Join(SharedVolumesDir, namespace, claim))
}

func sharedVolumeName(namespace, claim string) string { return "edl-" + namespace + "-" + claim }
