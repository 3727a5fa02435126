package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// TestTrainersWriteTheirOwnProgressAlone: with the controller running
// and the real API server's RBAC, a job's trainer account may patch its
// own progress ConfigMap, which the controller turns into status.progress,
// and nothing else: not another job's progress, not its own job's status,
// no ConfigMap it was not given. An account a changed template names is
// bound too.
func TestTrainersWriteTheirOwnProgressAlone(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	ctx := testContext(t)
	tj := jobClient(t)
	for _, name := range []string{"a", "b"} {
		job := exampleJob(t, ns, plain)
		job.Name = name
		_, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
		// Gone before the namespace is: an edl of a later test that
		// watches every namespace must find no job to sync in a
		// terminating one.
		t.Cleanup(func() {
			require.NoError(t, tj.PaddlepaddleV1().TrainingJobs(ns).Delete(context.Background(), name, metav1.DeleteOptions{}))
		})
	}
	for _, name := range []string{"a-progress", "b-progress"} {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		require.NoError(t, err, "the controller never created ConfigMap %s", name)
	}
	// The contract comes first, the ReplicaSets after it in the same sync.
	var account string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, v1.ReplicaSetName("a", v1.RoleTrainer), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		account = rs.Spec.Template.Spec.ServiceAccountName
		return true, nil
	})
	require.NoError(t, err, "the controller never created a's trainer ReplicaSet")
	assert.Equal(t, "a-trainer", account, "a's trainers run as a's account")

	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:a-trainer", ns),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	asA, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	asATJ, err := tjclient.NewForConfig(cfg)
	require.NoError(t, err)

	now := float64(time.Now().UnixNano()) / 1e9
	report := func(done int, at float64) []byte {
		return fmt.Appendf(nil, `{"data":{"done":"%d","total":"100000","time":"%.3f","run":"a-0"}}`, done, at)
	}
	// Its own: written, and read back by the controller.
	_, err = asA.CoreV1().ConfigMaps(ns).Patch(ctx, "a-progress", types.MergePatchType, report(0, now-20), metav1.PatchOptions{})
	require.NoError(t, err, "a's trainers write a's progress")
	_, err = asA.CoreV1().ConfigMaps(ns).Get(ctx, "a-progress", metav1.GetOptions{})
	require.NoError(t, err, "and read it")
	waitForJob(t, ns, "a", "status.progress from the first report", func(j *v1.TrainingJob) bool {
		return j.Status.Progress != nil && j.Status.Progress.Total == 100000
	})
	_, err = asA.CoreV1().ConfigMaps(ns).Patch(ctx, "a-progress", types.MergePatchType, report(5000, now-10), metav1.PatchOptions{})
	require.NoError(t, err)
	job := waitForJob(t, ns, "a", "5% done", func(j *v1.TrainingJob) bool {
		return j.Status.Progress != nil && j.Status.Progress.Percent != nil && *j.Status.Progress.Percent == 5
	})
	assert.Equal(t, int64(5000), job.Status.Progress.Done)

	// Nothing else.
	for what, err := range map[string]error{
		"patch b's progress": func() error {
			_, err := asA.CoreV1().ConfigMaps(ns).Patch(ctx, "b-progress", types.MergePatchType, report(1, now), metav1.PatchOptions{})
			return err
		}(),
		"read b's progress": func() error {
			_, err := asA.CoreV1().ConfigMaps(ns).Get(ctx, "b-progress", metav1.GetOptions{})
			return err
		}(),
		"list ConfigMaps": func() error {
			_, err := asA.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}(),
		"create a ConfigMap": func() error {
			_, err := asA.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c-progress"}}, metav1.CreateOptions{})
			return err
		}(),
		"delete its own progress": func() error {
			return asA.CoreV1().ConfigMaps(ns).Delete(ctx, "a-progress", metav1.DeleteOptions{})
		}(),
		"patch its job's status": func() error {
			_, err := asATJ.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, "a", types.MergePatchType,
				[]byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status")
			return err
		}(),
		"patch a pod": func() error {
			_, err := asA.CoreV1().Pods(ns).Patch(ctx, "any", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}(),
	} {
		assert.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
	}
	b, err := cp.Client.CoreV1().ConfigMaps(ns).Get(ctx, "b-progress", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, b.Data, "b's progress untouched")

	// a's trainers change account through their template: the new
	// account may write a's progress by the time the ReplicaSet's new pods
	// run as it.
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, "a", types.MergePatchType,
		[]byte(`{"spec":{"trainer":{"template":{"spec":{"serviceAccountName":"vision"}}}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, v1.ReplicaSetName("a", v1.RoleTrainer), metav1.GetOptions{})
		return err == nil && rs.Spec.Template.Spec.ServiceAccountName == "vision", nil
	})
	require.NoError(t, err, "a's trainers run as vision")
	cfg.Impersonate.UserName = fmt.Sprintf("system:serviceaccount:%s:vision", ns)
	asVision, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = asVision.CoreV1().ConfigMaps(ns).Patch(ctx, "a-progress", types.MergePatchType, report(6000, now), metav1.PatchOptions{})
	require.NoError(t, err, "vision writes a's progress")
	_, err = asVision.CoreV1().ConfigMaps(ns).Patch(ctx, "b-progress", types.MergePatchType, report(1, now), metav1.PatchOptions{})
	assert.True(t, apierrors.IsForbidden(err), "vision may not write b's progress: %v", err)
}
