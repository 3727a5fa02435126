package v1_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	"github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
)

func newJob(name string) *v1.TrainingJob {
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec: v1.TrainingJobSpec{
			Image:   "paddlepaddle/paddlecloud-job",
			Trainer: v1.TrainerSpec{MinInstance: 2, MaxInstance: 6},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1},
		},
	}
}

// TestGeneratedClientset drives the generated typed client through its fake:
// create, get, list, watch and the status subresource.
func TestGeneratedClientset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := fake.NewClientset()
	jobs := client.PaddlepaddleV1().TrainingJobs("team-a")

	w, err := jobs.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	_, err = jobs.Create(ctx, newJob("mnist"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = jobs.Create(ctx, newJob("mnist"), metav1.CreateOptions{})
	require.Error(t, err, "a second job of the same name must be refused")

	got, err := jobs.Get(ctx, "mnist", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(6), got.Spec.Trainer.MaxInstance)

	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Added, ev.Type)
		assert.Equal(t, "mnist", ev.Object.(*v1.TrainingJob).Name)
	case <-ctx.Done():
		t.Fatal("no watch event for the created job")
	}

	got.Status.Phase = v1.PhaseRunning
	got.Status.Trainers = v1.ReplicaStatus{Desired: 4, Current: 4, Ready: 3, Summary: "3/4"}
	_, err = jobs.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)

	list, err := jobs.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, v1.PhaseRunning, list.Items[0].Status.Phase)
	assert.Equal(t, "3/4", list.Items[0].Status.Trainers.Summary)

	require.NoError(t, jobs.Delete(ctx, "mnist", metav1.DeleteOptions{}))
	_, err = jobs.Get(ctx, "mnist", metav1.GetOptions{})
	require.Error(t, err)
}

// TestGeneratedInformer checks that the generated informer and lister see
// jobs created through the client, and their updates.
func TestGeneratedInformer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	client := fake.NewClientset(newJob("seeded"))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	informer := factory.Paddlepaddle().V1().TrainingJobs()

	updates := make(chan string, 10)
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { updates <- string(obj.(*v1.TrainingJob).Status.Phase) },
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	defer func() {
		cancel() // Shutdown waits for the informers, which stop when ctx is done
		factory.Shutdown()
	}()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced))

	_, err = client.PaddlepaddleV1().TrainingJobs("team-a").Create(ctx, newJob("added"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		jobs, err := informer.Lister().TrainingJobs("team-a").List(labels.Everything())
		return err == nil && len(jobs) == 2
	}, 5*time.Second, 10*time.Millisecond, "the lister must see the seeded and the created job")

	job, err := informer.Lister().TrainingJobs("team-a").Get("seeded")
	require.NoError(t, err)
	job = job.DeepCopy()
	job.Status.Phase = v1.PhaseCreating
	_, err = client.PaddlepaddleV1().TrainingJobs("team-a").UpdateStatus(ctx, job, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case phase := <-updates:
		assert.Equal(t, string(v1.PhaseCreating), phase)
	case <-ctx.Done():
		t.Fatal("the informer delivered no update")
	}
}
