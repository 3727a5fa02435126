package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestLastScaleIsTheNewerRecord: the job's last scaling is the record on
// its trainer ReplicaSet when the status lacks it — absent, older, or
// another scaling of the same second — and the status's otherwise.
func TestLastScaleIsTheNewerRecord(t *testing.T) {
	at := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	rec := func(sec int, from, to int32) *v1.ScaleRecord {
		return &v1.ScaleRecord{Time: metav1.NewTime(at.Add(time.Duration(sec) * time.Second)), From: from, To: to, Reason: "r"}
	}
	cases := []struct {
		name              string
		status, annotated *v1.ScaleRecord
		annotation        string // raw, when not annotated
		want              *v1.ScaleRecord
		missing           bool
	}{
		{name: "never scaled"},
		{name: "the status alone (a scaling before the ReplicaSet kept records)", status: rec(0, 1, 4), want: rec(0, 1, 4)},
		{name: "the ReplicaSet alone: the status write was lost", annotated: rec(0, 1, 4), want: rec(0, 1, 4), missing: true},
		{name: "both the same", status: rec(0, 1, 4), annotated: rec(0, 1, 4), want: rec(0, 1, 4)},
		{name: "the ReplicaSet's newer", status: rec(0, 1, 4), annotated: rec(30, 4, 2), want: rec(30, 4, 2), missing: true},
		{name: "the ReplicaSet's older (recreated by an older EDL's patch)", status: rec(30, 4, 2), annotated: rec(0, 1, 4), want: rec(30, 4, 2)},
		{name: "another scaling of the same second", status: rec(0, 1, 4), annotated: rec(0, 4, 5), want: rec(0, 4, 5), missing: true},
		{name: "a hand-edited annotation", status: rec(0, 1, 4), annotation: "4 trainers", want: rec(0, 1, 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tj := builders.Job("a", "ns")
			tj.Status.LastScale = c.status
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"other": "kept"}}}
			switch {
			case c.annotated != nil:
				builders.LastScale(*c.annotated)(rs)
			case c.annotation != "":
				rs.Annotations[v1.AnnotationLastScale] = c.annotation
			}
			got, missing := lastScaleOf(tj, rs)
			assert.Equal(t, c.missing, missing)
			if c.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.True(t, v1.SameScale(*c.want, *got), "got %+v, want %+v", got, c.want)
		})
	}
}

// lostStatusWrite is the state after a scaling whose status write was
// lost: the trainer ReplicaSet of job name holds the record r, the status
// the scaling before, if any.
func lostStatusWrite(name string, minInstance, maxInstance int32, r v1.ScaleRecord, before *v1.ScaleRecord, opts ...builders.JobOption) []runtime.Object {
	objs := elasticJob(name, minInstance, maxInstance, r.To, append(opts, func(j *v1.TrainingJob) { j.Status.LastScale = before })...)
	builders.LastScale(r)(objs[1].(*appsv1.ReplicaSet))
	return objs
}

// torch makes a job a PyTorch job whose resizes are held for at least
// cooldown.
func torch(cooldown time.Duration) builders.JobOption {
	return func(j *v1.TrainingJob) {
		builders.PyTorch("python3 train.py")(j)
		j.Spec.ElasticPolicy = &v1.ElasticPolicy{ResizeCooldownSeconds: ptr.To(int32(cooldown / time.Second))}
	}
}

// TestElasticJobsCoolDownFromTheReplicaSetsRecord: the planner's cool-downs
// start at a scaling only the trainer ReplicaSet records — a resize of a
// PyTorch job, a scale-down of any — and the record is to be copied into
// the status, once.
func TestElasticJobsCoolDownFromTheReplicaSetsRecord(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	earlier := &v1.ScaleRecord{Time: metav1.NewTime(now.Add(-time.Hour)), From: 1, To: 6, Reason: "grown"}
	grown := v1.ScaleRecord{Time: metav1.NewTime(now.Add(-time.Minute)), From: 1, To: 4, Reason: "grown"}
	shrunk := v1.ScaleRecord{Time: metav1.NewTime(now.Add(-10 * time.Second)), From: 6, To: 4, Reason: "room for a pod"}
	objs := objects(
		lostStatusWrite("torch", 1, 6, grown, nil, torch(10*time.Minute)),
		lostStatusWrite("shrunk", 1, 6, shrunk, earlier),
		lostStatusWrite("recorded", 1, 6, grown, &grown),
		[]runtime.Object{node("n1", "64", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, PriceResizes: true}, objs...)
	jobs, _, unrecorded := f.scaler.elasticJobs()
	byKey := map[string]planner.Job{}
	for _, j := range jobs {
		byKey[j.Key] = j
	}
	assert.Equal(t, grown.Time.Time, byKey["ns/torch"].LastResize.UTC(), "the resize's price counts from the ReplicaSet's record")
	assert.True(t, byKey["ns/torch"].LastScaleDown.IsZero(), "a growth starts no cool-down")
	assert.Equal(t, shrunk.Time.Time, byKey["ns/shrunk"].LastScaleDown.UTC(), "the scale-down's cool-down counts from the ReplicaSet's record")

	require.Len(t, unrecorded, 2, "the status of ns/recorded has its record")
	assert.True(t, v1.SameScale(grown, unrecorded["ns/torch"].record))
	assert.False(t, unrecorded["ns/torch"].coolDown, "a growth starts no cool-down")
	assert.True(t, v1.SameScale(shrunk, unrecorded["ns/shrunk"].record))
	assert.True(t, unrecorded["ns/shrunk"].coolDown, "a scale-down starts the cool-down")

	// Once this replica wrote a record into the status, a job informer
	// that has not caught up does not make it copy it again.
	f.scaler.noteRecorded(f.job("torch"), unrecorded["ns/torch"])
	_, _, unrecorded = f.scaler.elasticJobs()
	assert.NotContains(t, unrecorded, "ns/torch")
	assert.Contains(t, unrecorded, "ns/shrunk")
}

// job reads the job name from the informer.
func (f *actuatorFixture) job(name string) *v1.TrainingJob {
	f.t.Helper()
	j, err := f.scaler.jobs.TrainingJobs("ns").Get(name)
	require.NoError(f.t, err)
	return j
}

// TestRunOnceCopiesTheReplicaSetsRecordIntoTheStatus: after a restart that
// lost the status write of a scaling, the next plan holds the job for the
// cool-down the scaling started — though it has room to grow — and writes
// the record into the status, lastScaleDown too for a scale-down, so that
// the controller counts the resize once. A second plan writes nothing.
func TestRunOnceCopiesTheReplicaSetsRecordIntoTheStatus(t *testing.T) {
	cases := []struct {
		name     string
		objs     func(now time.Time) ([]runtime.Object, v1.ScaleRecord)
		coolDown time.Duration
		limit    planner.Limit
	}{{
		name: "a PyTorch job's resize",
		objs: func(now time.Time) ([]runtime.Object, v1.ScaleRecord) {
			r := v1.ScaleRecord{Time: metav1.NewTime(now.Add(-time.Minute)), From: 1, To: 4, Reason: "scale up by 3"}
			return lostStatusWrite("a", 1, 8, r, nil, torch(10*time.Minute)), r
		},
		limit: planner.LimitCoolDown,
	}, {
		name: "a scale-down",
		objs: func(now time.Time) ([]runtime.Object, v1.ScaleRecord) {
			before := &v1.ScaleRecord{Time: metav1.NewTime(now.Add(-time.Hour)), From: 1, To: 6, Reason: "scale up by 5"}
			r := v1.ScaleRecord{Time: metav1.NewTime(now.Add(-5 * time.Second)), From: 6, To: 4, Reason: "scale down by 2"}
			return lostStatusWrite("a", 1, 8, r, before), r
		},
		coolDown: time.Minute,
		limit:    planner.LimitCoolDown,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			objs, r := c.objs(now)
			f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, CoolDown: c.coolDown, PriceResizes: true},
				append(objs, node("n1", "10", "64Gi"))...)

			assert.Empty(t, f.scaler.RunOnce(context.Background()), "4 of 1..8 trainers with room for 9: held by the cool-down")
			assert.Empty(t, replicaSetPatches(f), "no second resize")
			job := f.waitForJob("a", func(j *v1.TrainingJob) bool { return j.Status.LastScale != nil && j.Status.LastScale.To == r.To })
			assert.True(t, v1.SameScale(r, *job.Status.LastScale), "status.lastScale %+v is the ReplicaSet's record %+v", job.Status.LastScale, r)
			if r.To < r.From {
				require.NotNil(t, job.Status.LastScaleDown)
				assert.Equal(t, r.Time.Unix(), job.Status.LastScaleDown.Unix(), "the cool-down starts at the scale-down")
			} else {
				assert.Nil(t, job.Status.LastScaleDown)
			}
			require.Len(t, job.Status.Conditions, 1)
			assert.Equal(t, string(c.limit), job.Status.Conditions[0].Reason)

			f.kube.ClearActions()
			f.tj.ClearActions()
			assert.Empty(t, f.scaler.RunOnce(context.Background()))
			assert.Empty(t, f.writes(), "the status has the record: nothing to write")
		})
	}
}

// TestApplyRecordsOnAReplicaSetWithoutAnnotations: the record goes on a
// trainer ReplicaSet that has no annotations at all, as its first.
func TestApplyRecordsOnAReplicaSetWithoutAnnotations(t *testing.T) {
	objs := elasticJob("a", 1, 4, 1)
	objs[1].(*appsv1.ReplicaSet).Annotations = nil
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, append(objs, node("n1", "10", "64Gi"))...)
	act := planner.ScaleAction{Job: "ns/a", From: 1, To: 3, Reason: "scale up by 2"}
	require.NoError(t, f.scaler.apply(context.Background(), f.job("a"), act, f.clock.Now()))
	rs, err := f.kube.AppsV1().ReplicaSets("ns").Get(context.Background(), "a-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *rs.Spec.Replicas)
	got := v1.LastScaleOf(rs.Annotations)
	require.NotNil(t, got, "annotations %v", rs.Annotations)
	assert.True(t, v1.SameScale(v1.ScaleRecord{Time: metav1.NewTime(f.clock.Now()), From: 1, To: 3, Reason: "scale up by 2"}, *got))
}
