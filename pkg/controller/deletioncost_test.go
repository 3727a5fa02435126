package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func TestDeletionCosts(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.Trainers(1, 8))
	job.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	trainer := func(name, node string, ageSeconds int, mutators ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.Namespace, Labels: map[string]string{v1.LabelTrainer: job.Name},
				CreationTimestamp: metav1.NewTime(job.CreationTimestamp.Add(time.Duration(ageSeconds) * time.Second))},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if node == "" {
			p.Status.Phase = corev1.PodPending
		}
		for _, m := range mutators {
			m(p)
		}
		return p
	}
	restarted := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "trainer", RestartCount: 2}}
	}
	priced := func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDeletionCost: "1"} }
	marked := func(p *corev1.Pod) {
		p.Annotations = map[string]string{v1.AnnotationDeletionCost: v1.DeletionCostRemove}
	}
	// The trainers are labelled as the job's: the informer's cache keeps
	// the deletion cost of a job's pods only.

	tests := []struct {
		name string
		pods []*corev1.Pod
		want map[string]string
	}{
		{"one trainer per node: the ranking falls through to age", []*corev1.Pod{
			trainer("a", "n1", 0), trainer("b", "n2", 5), trainer("c", "", 9),
		}, nil},
		{"two per node on every node", []*corev1.Pod{
			trainer("a", "n1", 0), trainer("b", "n1", 1), trainer("c", "n2", 2), trainer("d", "n2", 3),
		}, nil},
		{"a lone trainer", []*corev1.Pod{trainer("a", "n1", 0)}, nil},
		{"old trainers doubled up: costs fall with age, pending ones get none", []*corev1.Pod{
			trainer("a", "n1", 0), trainer("b", "n1", 10), trainer("c", "n2", 20), trainer("d", "", 30),
		}, map[string]string{"a": "1000000000", "b": "999999990", "c": "999999980"}},
		{"an old trainer restarted more", []*corev1.Pod{
			trainer("a", "n1", 0, restarted), trainer("b", "n2", 7),
		}, map[string]string{"a": "1000000000", "b": "999999993"}},
		{"a trainer the autoscaler marked for removal keeps its mark and puts no costs in use", []*corev1.Pod{
			trainer("a", "n1", 0, marked), trainer("b", "n2", 4), trainer("c", "n3", 6),
		}, nil},
		{"a marked trainer keeps its mark while the others get costs", []*corev1.Pod{
			trainer("a", "n1", 0, marked), trainer("b", "n2", 4), trainer("c", "n2", 6), trainer("d", "n3", 8),
		}, map[string]string{"b": "999999996", "c": "999999994", "d": "999999992"}},
		{"costs in use are kept up for a new trainer", []*corev1.Pod{
			trainer("a", "n1", 0, priced), trainer("b", "n2", 4),
		}, map[string]string{"a": "1000000000", "b": "999999996"}},
		{"pods being deleted are left out", []*corev1.Pod{
			trainer("a", "n1", 0), trainer("b", "n2", 3), trainer("c", "n2", 4, func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, DeletionCosts(job, slim(tt.pods...)))
		})
	}
}

// markedAt marks a trainer for removal at the given time, as the
// autoscaler does.
func markedAt(at time.Time) builders.PodOption {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{v1.AnnotationDeletionCost: v1.DeletionCostRemove, v1.AnnotationMarkedForRemoval: at.UTC().Format(time.RFC3339)}
	}
}

func TestStaleMarks(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	names := func(pods []*cluster.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		pods   []*corev1.Pod
		target int32 // 0: as many as the pods
		stale  []string
		next   time.Duration
	}{
		{"a fresh mark stands, and is looked at again when it goes stale",
			[]*corev1.Pod{trainerPod("a", builders.Ready(), markedAt(now.Add(-20*time.Second)))}, 0, nil, 40 * time.Second},
		{"a mark older than MarkTTL on a trainer no longer to be deleted is stale",
			[]*corev1.Pod{trainerPod("a", builders.Ready(), markedAt(now.Add(-MarkTTL-time.Second))), trainerPod("b", builders.Ready(), markedAt(now.Add(-50*time.Second)))},
			0, []string{"a"}, 10 * time.Second},
		{"an old mark stands while the ReplicaSet (or a pending scale-down) is to delete trainers",
			[]*corev1.Pod{trainerPod("a", builders.Ready(), markedAt(now.Add(-time.Hour))), trainerPod("b", builders.Ready())},
			1, nil, 0},
		{"a trainer being deleted keeps its mark",
			[]*corev1.Pod{trainerPod("a", builders.Ready(), builders.Terminating(), markedAt(now.Add(-time.Hour)))}, 0, nil, 0},
		{"a mark without its time (of an older EDL) is left alone",
			[]*corev1.Pod{trainerPod("a", builders.Ready(), marked())}, 0, nil, 0},
		{"a priced trainer is no mark",
			[]*corev1.Pod{trainerPod("a", builders.Ready(), func(p *corev1.Pod) {
				p.Annotations = map[string]string{v1.AnnotationDeletionCost: "7", v1.AnnotationMarkedForRemoval: now.Add(-time.Hour).Format(time.RFC3339)}
			})}, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.target
			if target == 0 {
				target = int32(len(tc.pods))
			}
			stale, next := StaleMarks(slim(tc.pods...), target, now)
			assert.Equal(t, tc.stale, names(stale))
			assert.Equal(t, tc.next, next)
		})
	}
}

// TestSyncClearsAStaleMark: a trainer marked for removal more than MarkTTL
// ago that still runs (the ReplicaSet deleted another, or the autoscaler
// stopped before the scale-down) loses its mark, so that a Horovod job's
// hosts file lists it again.
func TestSyncClearsAStaleMark(t *testing.T) {
	f := newFixture(t)
	job := f.addJob(horovodJob())
	f.addJobObjects(job, 2)
	now := time.Now()
	f.addPods(hostPod("t-a", "10.0.0.1", 0, builders.Ready()),
		hostPod("t-b", "10.0.0.2", 0, builders.Ready(), markedAt(now.Add(-2*MarkTTL))))
	require.NoError(t, f.sync("mnist"))
	var patches []string
	for _, a := range f.kube.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			patches = append(patches, p.GetName()+" "+string(p.GetPatch()))
		}
	}
	assert.Contains(t, patches, `t-b {"metadata":{"annotations":{"`+v1.AnnotationDeletionCost+`":null,"`+v1.AnnotationMarkedForRemoval+`":null}}}`)
}
