package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
)

func trainingQueue(name string, namespaces ...string) *v1.TrainingQueue {
	q := &v1.TrainingQueue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	q.Spec.Namespaces = namespaces
	return q
}

// TestQueueGroupsByTeam: with TrainingQueues, each job is shown under the
// team of its namespace ("default" for a namespace no queue names, or two
// queues name), the teams by name, queue order kept within a team.
func TestQueueGroupsByTeam(t *testing.T) {
	jobs := []v1.TrainingJob{
		job("vision", "v1", now.Add(-time.Hour), v1.PhaseQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission, "position 1 of 4 in the queue: a"),
		job("nlp", "n1", now.Add(-time.Hour), v1.PhaseQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission, "position 2 of 4 in the queue: b"),
		job("shared", "s1", now.Add(-time.Hour), v1.PhaseQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission, "position 3 of 4 in the queue: c"),
		job("nlp-dev", "n2", now.Add(-time.Hour), v1.PhaseQueued, metav1.ConditionTrue, v1.ReasonWaitingForQuota, "position 4 of 4 in the queue: d"),
	}
	c := tjfake.NewClientset(trainingQueue("nlp", "nlp", "nlp-dev", "shared"), trainingQueue("vision", "vision", "shared"))
	teams, err := listTeams(t.Context(), c)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"nlp": "nlp", "nlp-dev": "nlp", "shared": v1.DefaultTeam, "vision": "vision"}, teams)

	q := byTeam(queueOf(jobs, now), teams)
	var table bytes.Buffer
	require.NoError(t, printQueue(&table, &bytes.Buffer{}, q, "", ""))
	assert.Equal(t, `TEAM      NAMESPACE   NAME   POSITION   WAITING   REASON                CAUSE
default   shared      s1     3/4        60m       WaitingForAdmission   c
nlp       nlp         n1     2/4        60m       WaitingForAdmission   b
nlp       nlp-dev     n2     4/4        60m       WaitingForQuota       d
vision    vision      v1     1/4        60m       WaitingForAdmission   a
`, table.String())

	var js bytes.Buffer
	require.NoError(t, printQueue(&js, &bytes.Buffer{}, q, "json", ""))
	var back Queue
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Len(t, back.Jobs, 4)
	assert.Equal(t, "nlp", back.Jobs[1].Team)
}

// TestQueueWithoutTeams: no TrainingQueue, a user who may not list them, or
// a cluster without the API show the queue as before, without TEAM; another
// error stops the command.
func TestQueueWithoutTeams(t *testing.T) {
	jobs := []v1.TrainingJob{job("a", "j", now.Add(-time.Minute), v1.PhaseQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission, "position 1 of 1 in the queue: x")}
	refuse := func(err error) *tjfake.Clientset {
		c := tjfake.NewClientset()
		c.PrependReactor("list", "trainingqueues", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err })
		return c
	}
	gr := schema.GroupResource{Group: "paddlepaddle.org", Resource: "trainingqueues"}
	for name, c := range map[string]*tjfake.Clientset{
		"no queue":  tjfake.NewClientset(),
		"forbidden": refuse(apierrors.NewForbidden(gr, "", errors.New("no"))),
		"no API":    refuse(apierrors.NewNotFound(gr, "")),
	} {
		t.Run(name, func(t *testing.T) {
			teams, err := listTeams(t.Context(), c)
			require.NoError(t, err)
			require.Nil(t, teams)
			var table bytes.Buffer
			require.NoError(t, printQueue(&table, &bytes.Buffer{}, byTeam(queueOf(jobs, now), teams), "", "a"))
			assert.Equal(t, "NAME   POSITION   WAITING   REASON                CAUSE\nj      1/1        60s       WaitingForAdmission   x\n", table.String())
		})
	}
	_, err := listTeams(t.Context(), refuse(apierrors.NewServiceUnavailable("etcd is down")))
	require.ErrorContains(t, err, "list TrainingQueues")
}
