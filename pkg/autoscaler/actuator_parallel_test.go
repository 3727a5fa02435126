package autoscaler

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// slowAPI answers every request after delay, as an API server under load
// would, and keeps the most patches of one resource (ReplicaSets unless
// resource says) it had in flight at once.
type slowAPI struct {
	delay    time.Duration
	resource string

	mu             sync.Mutex
	inFlight, most int
	patched        []string // the ReplicaSets patched, in the order the patches came
}

func (s *slowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resource := s.resource
	if resource == "" {
		resource = "replicasets"
	}
	rs := strings.Contains(r.URL.Path, "/replicasets/")
	if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/"+resource+"/") {
		s.mu.Lock()
		s.inFlight++
		s.patched = append(s.patched, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		s.most = max(s.most, s.inFlight)
		s.mu.Unlock()
		defer func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }()
	}
	time.Sleep(s.delay)
	w.Header().Set("Content-Type", "application/json")
	kind := `"apiVersion":"v1","kind":"Pod"`
	switch {
	case rs:
		kind = `"apiVersion":"apps/v1","kind":"ReplicaSet"`
	case strings.Contains(r.URL.Path, "/trainingjobs/"):
		kind = `"apiVersion":"paddlepaddle.org/v1","kind":"TrainingJob"`
	}
	_, _ = w.Write([]byte(`{` + kind + `,"metadata":{"name":"x"}}`))
}

// slowJobs is a fixture of six elastic jobs at 4 trainers, a to f, and the
// URL of api, a slow API server to point one of its clients at.
func slowJobs(t *testing.T, api *slowAPI) (*actuatorFixture, []string, string) {
	t.Helper()
	names := []string{"a", "b", "c", "d", "e", "f"}
	var groups [][]runtime.Object
	for _, n := range names {
		groups = append(groups, elasticJob(n, 1, 10, 4))
	}
	f := newActuatorFixture(t, Config{MaxLoadDesired: 1, Interval: time.Second}, objects(groups...)...)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return f, names, srv.URL
}

// TestAPlanScalesSeveralJobsAtOnce: a yield scales down every job with
// trainers where the pods may go; the jobs' patches are sent together, not
// one job after the other, each scale-up after every scale-down.
func TestAPlanScalesSeveralJobsAtOnce(t *testing.T) {
	api := &slowAPI{delay: 100 * time.Millisecond}
	f, names, url := slowJobs(t, api)
	f.scaler.kubeClient = kubernetes.NewForConfigOrDie(&rest.Config{Host: url, QPS: 1000, Burst: 1000})

	var actions []planner.ScaleAction
	jobs := map[string]*v1.TrainingJob{}
	for i, n := range names {
		job, err := f.tjInf.Paddlepaddle().V1().TrainingJobs().Lister().TrainingJobs("ns").Get(n)
		require.NoError(t, err)
		jobs["ns/"+n] = job
		act := planner.ScaleAction{Job: "ns/" + n, From: 4, To: 2, Remove: []string{n + "-trainer-a", n + "-trainer-b"}, Reason: "yield"}
		if i == len(names)-1 {
			act = planner.ScaleAction{Job: "ns/" + n, From: 4, To: 6, Reason: "grow"}
		}
		actions = append(actions, act)
	}
	done := f.scaler.applyActions(t.Context(), actions, jobs, time.Now())

	assert.Len(t, done.scaled, len(names), "every job scaled")
	assert.Empty(t, done.failed)
	require.Len(t, api.patched, len(names))
	assert.Equal(t, "f-trainer", api.patched[len(names)-1], "the scale-up after every scale-down")
	// One job after the other, one patch would be in flight at a time.
	assert.GreaterOrEqual(t, api.most, 2, "the scale-downs at once")
}

// TestAPlanRecordsSeveralStatusesAtOnce: after a yield every job scaled has
// a status to write; the writes go out together, not one job after the
// other (which delayed the next plan by seconds on a 1,000-node cluster).
func TestAPlanRecordsSeveralStatusesAtOnce(t *testing.T) {
	api := &slowAPI{delay: 100 * time.Millisecond, resource: "trainingjobs"}
	f, names, url := slowJobs(t, api)
	f.scaler.tjClient = tjclient.NewForConfigOrDie(&rest.Config{Host: url, QPS: 1000, Burst: 1000})

	var d planner.Decision
	jobs := map[string]*v1.TrainingJob{}
	done := applied{scaled: map[string]*scaling{}, failed: map[string]bool{}}
	for _, n := range names {
		job, err := f.tjInf.Paddlepaddle().V1().TrainingJobs().Lister().TrainingJobs("ns").Get(n)
		require.NoError(t, err)
		jobs["ns/"+n] = job
		d.Jobs = append(d.Jobs, planner.Explanation{Job: "ns/" + n, Limit: planner.LimitAtMax, Message: "at its maximum"})
		done.scaled["ns/"+n] = &scaling{record: v1.ScaleRecord{From: 4, To: 10}}
	}
	f.scaler.recordScalings(t.Context(), d, jobs, done, time.Now())

	assert.Len(t, api.patched, len(names), "a status write for every job")
	// One job after the other, one write would be in flight at a time.
	assert.GreaterOrEqual(t, api.most, 2, "the status writes at once")
}
