package autoscaler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// horovod makes a job a Horovod job with a host-discovery file.
func horovod(j *v1.TrainingJob) {
	builders.PyTorch("python3 train.py")(j)
	j.Spec.Framework = v1.FrameworkHorovod
	j.Spec.ElasticPolicy = &v1.ElasticPolicy{HostDiscovery: &v1.HostDiscovery{SlotsPerHost: ptr.To(int32(1))}}
}

// hostsConfigMap is job h's host-discovery ConfigMap naming pods.
func hostsConfigMap(pods string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v1.HostsConfigMapName("h"), Namespace: "ns",
		Annotations: map[string]string{v1.AnnotationHostsPods: pods}}}
}

// applyHorovod applies a scale-down of the Horovod job h from 3 trainers
// to 1, removing h-trainer-c and h-trainer-b; controller, when set, is
// called once the marks are written, as the controller's sync would be.
func applyHorovod(t *testing.T, timeout time.Duration, controller func(f *actuatorFixture)) (*actuatorFixture, time.Time) {
	objs := objects(elasticJob("h", 1, 4, 3, horovod), []runtime.Object{node("n1", "10", "64Gi"),
		hostsConfigMap("h-trainer-a,h-trainer-b,h-trainer-c")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, HostsDropTimeout: timeout}, objs...)
	var lowered time.Time
	var mu sync.Mutex
	marks := 0
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if marks++; marks == 2 && controller != nil {
			go controller(f)
		}
		return false, nil, nil
	})
	f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		lowered = time.Now()
		return false, nil, nil
	})
	ctx := context.Background()
	job, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(ctx, "h", metav1.GetOptions{})
	require.NoError(t, err)
	act := planner.ScaleAction{Job: "ns/h", From: 3, To: 1, Reason: "scale down by 2: room for a pod", Cause: planner.CausePriority,
		Nodes: []string{"n1", "n1"}, Remove: []string{"h-trainer-c", "h-trainer-b"}}
	require.NoError(t, f.scaler.apply(ctx, job, act, f.clock.Now()))
	return f, lowered
}

// TestApplyLowersAHorovodJobOnlyOnceItsHostsFileDroppedTheTrainers: the
// marks, with their time, then the ConfigMap without the marked trainers,
// then v1.HostsSettle for the kubelet, and only then the replicas.
func TestApplyLowersAHorovodJobOnlyOnceItsHostsFileDroppedTheTrainers(t *testing.T) {
	updated := make(chan time.Time, 1)
	f, lowered := applyHorovod(t, 0, func(f *actuatorFixture) {
		time.Sleep(300 * time.Millisecond)
		before := time.Now()
		_, err := f.kube.CoreV1().ConfigMaps("ns").Update(context.Background(), hostsConfigMap("h-trainer-a"), metav1.UpdateOptions{})
		assert.NoError(t, err)
		updated <- before
	})
	var dropped time.Time
	select {
	case dropped = <-updated:
	case <-time.After(time.Second):
		t.Fatal("the ConfigMap was not updated")
	}
	assert.GreaterOrEqual(t, lowered.Sub(dropped), v1.HostsSettle-hostsPoll, "the replicas were lowered %v after the ConfigMap dropped the trainers", lowered.Sub(dropped))
	for _, name := range []string{"h-trainer-b", "h-trainer-c"} {
		pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.DeletionCostRemove, pod.Annotations[v1.AnnotationDeletionCost], name)
		assert.Equal(t, f.clock.Now().UTC().Format(time.RFC3339), pod.Annotations[v1.AnnotationMarkedForRemoval], name)
	}
	assert.Equal(t, []string{"Normal Scaled Scaled trainers from 3 to 1: scale down by 2: room for a pod"}, drain(f.recorder))
}

// TestApplyGoesAheadWhenTheHostsFileIsNotUpdated: a controller that does
// not write the ConfigMap holds a scale-down — a yield among them — no
// longer than the timeout, and a Warning event says so.
func TestApplyGoesAheadWhenTheHostsFileIsNotUpdated(t *testing.T) {
	start := time.Now()
	f, lowered := applyHorovod(t, 300*time.Millisecond, nil)
	assert.GreaterOrEqual(t, lowered.Sub(start), 300*time.Millisecond)
	assert.Less(t, lowered.Sub(start), v1.HostsSettle, "no settle after a timeout")
	assert.Equal(t, []string{
		"Warning HostsNotUpdated Scaling down without ConfigMap h-hosts dropping trainers h-trainer-c,h-trainer-b within 300ms",
		"Normal Scaled Scaled trainers from 3 to 1: scale down by 2: room for a pod",
	}, drain(f.recorder))
}

// TestApplyStoppedWhileTheHostsFileDropsClearsTheMarks: a scale-down of a
// Horovod job stopped — a shutdown, a lost lease — while it waits for the
// hosts file lowers nothing, records nothing, and clears the marks with a
// context of its own, so that they do not keep running trainers out of the
// hosts file.
func TestApplyStoppedWhileTheHostsFileDropsClearsTheMarks(t *testing.T) {
	objs := objects(elasticJob("h", 1, 4, 3, horovod), []runtime.Object{node("n1", "10", "64Gi"),
		hostsConfigMap("h-trainer-a,h-trainer-b,h-trainer-c")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, HostsDropTimeout: time.Minute}, objs...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.kube.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		cancel() // stopped while the hosts file still lists the trainers
		return false, nil, nil
	})
	job := f.job("h")
	act := planner.ScaleAction{Job: "ns/h", From: 3, To: 1, Reason: "scale down by 2: room for a pod", Cause: planner.CausePriority,
		Nodes: []string{"n1", "n1"}, Remove: []string{"h-trainer-c", "h-trainer-b"}}
	err := f.scaler.apply(ctx, job, act, f.clock.Now())
	require.ErrorIs(t, err, context.Canceled)

	assert.Empty(t, replicaSetPatches(f), "the replicas stay")
	var marks, clears int
	for _, w := range f.writes() {
		if p, ok := w.(clienttesting.PatchAction); ok && p.GetResource().Resource == "pods" {
			if string(p.GetPatch()) == string(v1.RemovalMarkPatch(time.Time{})) {
				clears++
			} else {
				marks++
			}
		}
	}
	assert.Equal(t, 2, marks)
	assert.Equal(t, 2, clears, "every mark is cleared")
	for _, name := range []string{"h-trainer-b", "h-trainer-c"} {
		pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotContains(t, pod.Annotations, v1.AnnotationDeletionCost, name)
		assert.NotContains(t, pod.Annotations, v1.AnnotationMarkedForRemoval, name)
	}
	assert.Empty(t, drain(f.recorder), "no Scaled event, and no warning about a scale-down that did not happen")
}
