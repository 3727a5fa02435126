package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// chaosSeedEnv, when set, replays a chaos schedule that a failed run logged.
const chaosSeedEnv = "EDL_CHAOS_SEED"

// boundsWatch sees every version of a namespace's trainer and pserver
// ReplicaSets through an informer's watch, which shows each write the API
// server stores, where polling would see only samples. It records every
// write of a trainer count outside the jobs' [min, max] or of a pserver
// count other than 1, and when a trainer count last changed. A queued job's
// ReplicaSets are held at 0 until admission scales them up, so 0 is a
// violation only once a ReplicaSet has run (no job here is preempted or
// suspended).
type boundsWatch struct {
	began time.Time
	min   int32
	max   int32

	mu         sync.Mutex
	versions   int
	violations []string
	lastChange time.Time
	ups, downs int
	admitted   map[string]bool // ReplicaSets seen with a count above 0
}

func (w *boundsWatch) observe(old, rs *appsv1.ReplicaSet) {
	replicas := ptr.Deref(rs.Spec.Replicas, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.versions++
	if old != nil && ptr.Deref(old.Spec.Replicas, 1) == replicas {
		return // a status write: the count was judged when it was written
	}
	at := time.Since(w.began).Round(time.Millisecond)
	if replicas == 0 && !w.admitted[rs.Name] {
		return // queued: held at 0 until admission
	}
	if replicas > 0 {
		w.admitted[rs.Name] = true
	}
	switch {
	case rs.Labels[v1.LabelTrainer] != "":
		if replicas < w.min || replicas > w.max {
			w.violations = append(w.violations, fmt.Sprintf("at %s: trainer ReplicaSet %s has %d replicas, outside [%d, %d] (resourceVersion %s)",
				at, rs.Name, replicas, w.min, w.max, rs.ResourceVersion))
		}
		if old == nil {
			return
		}
		switch from := ptr.Deref(old.Spec.Replicas, 1); {
		case from == 0: // admission, not growth
		case replicas > from:
			w.ups++
		default:
			w.downs++
		}
		w.lastChange = time.Now()
	case rs.Labels[v1.LabelPserver] != "":
		if replicas != 1 {
			w.violations = append(w.violations, fmt.Sprintf("at %s: pserver ReplicaSet %s has %d replicas, not 1 (resourceVersion %s)",
				at, rs.Name, replicas, rs.ResourceVersion))
		}
	}
}

// watchBounds starts a boundsWatch of ns on plane until the test ends.
func watchBounds(t *testing.T, plane *framework.ControlPlane, ns string, minInstance, maxInstance int32) *boundsWatch {
	t.Helper()
	w := &boundsWatch{began: time.Now(), min: minInstance, max: maxInstance, admitted: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(plane.Client, 0, informers.WithNamespace(ns))
	_, err := factory.Apps().V1().ReplicaSets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if rs, ok := obj.(*appsv1.ReplicaSet); ok {
				w.observe(nil, rs)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*appsv1.ReplicaSet)
			rs, ok2 := newObj.(*appsv1.ReplicaSet)
			if ok1 && ok2 {
				w.observe(old, rs)
			}
		},
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	for typ, ok := range factory.WaitForCacheSync(stop) {
		require.True(t, ok, "the %v informer did not sync", typ)
	}
	return w
}

func (w *boundsWatch) quietSince() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastChange
}

// loadDeployment is n pods of 1 CPU at the PriorityClass "load".
func loadDeployment(ns string, n int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "load", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "load"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "load"}},
				Spec: corev1.PodSpec{
					PriorityClassName: "load",
					Containers:        []corev1.Container{{Name: "main", Image: "nginx", Resources: requests("1", "512Mi")}},
				},
			},
		},
	}
}

func scaleDeployment(ctx context.Context, plane *framework.ControlPlane, ns, name string, n int32) error {
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	_, err := plane.Client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// chaosSeed returns the seed of the chaos schedule: EDL_CHAOS_SEED, or the clock.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv(chaosSeedEnv); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "%s", chaosSeedEnv)
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// between returns a random duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// TestKillNineChaos runs two replicas of the edl binary on a control plane
// of its own while ten elastic jobs scale under a load that comes and goes,
// and kills one replica with SIGKILL — the leader or the standby, at random —
// at random moments, restarting it each time. Throughout, no trainer count
// may leave [min, max]; afterwards every job has exactly its objects, all
// controlled by it, and once the load holds still the cluster converges.
// The convergence time since the last kill is logged, not asserted.
func TestKillNineChaos(t *testing.T) {
	const (
		jobsNS, loadNS   = "training", "load"
		jobCount         = 10
		kills            = 24
		loadHigh         = int32(12) // 1-CPU pods: the jobs must yield
		minInst, maxInst = int32(1), int32(8)
	)
	began := time.Now()
	ctx, plane, tj := startFleetPlane(t, framework.NodeSpec{Name: "chaos", CPU: "8", Memory: "32Gi", Count: 6}, 8*time.Minute, jobsNS, loadNS)
	bounds := watchBounds(t, plane, jobsNS, minInst, maxInst)

	// At -max_load_desired 0.9 the plan leaves at least 4.8 of the 48 CPUs
	// idle, so some node always has room for a 500m trainer: every trainer
	// the plan keeps can run. At the default 0.97 the idle CPU can be split
	// by the 100m pservers into pieces too small for a trainer, and Plan
	// then keeps an above-min trainer that fits nowhere pending for good —
	// the cluster never settles, for reasons that have nothing to do with
	// the kills.
	edl := newFleet(t, plane, "-max_load_desired", "0.9")
	replicas := []*edlRun{edl.start("a"), edl.start("b")}

	jobs := map[string]*v1.TrainingJob{}
	for i := range jobCount {
		job, err := tj.PaddlepaddleV1().TrainingJobs(jobsNS).Create(ctx, elasticJob(jobsNS, fmt.Sprintf("job-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
		jobs[job.Name] = job
	}
	for _, job := range jobs {
		waitForReplicaSets(t, ctx, plane, tj, job)
	}
	t.Logf("%d jobs Running %s after the start", jobCount, time.Since(began).Round(100*time.Millisecond))

	seed := chaosSeed(t)
	t.Logf("chaos seed %d (%s=%d replays the schedule)", seed, chaosSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	// The load toggles between nothing and loadHigh pods every 2-5 s.
	_, err := plane.Client.AppsV1().Deployments(loadNS).Create(ctx, loadDeployment(loadNS, 0), metav1.CreateOptions{})
	require.NoError(t, err)
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadRNG := rand.New(rand.NewPCG(rng.Uint64(), 1))
	t.Cleanup(stopLoad)
	loadDone := make(chan int, 1)
	go func() {
		toggles, size := 0, int32(0)
		for {
			select {
			case <-loadCtx.Done():
				loadDone <- toggles
				return
			case <-time.After(between(loadRNG, 2*time.Second, 5*time.Second)):
			}
			if err := scaleDeployment(loadCtx, plane, loadNS, "load", loadHigh-size); err == nil {
				size = loadHigh - size
				toggles++
			}
		}
	}()

	// A run may end on its own: a leader that cannot renew its lease in
	// time exits so that a restart rejoins the election. Like a kubelet,
	// the test restarts it, and counts it.
	selfExits := 0
	restartExited := func() {
		for n, r := range replicas {
			if r.ExitedUnasked() {
				selfExits++
				_, err := r.Exited()
				t.Logf("replica %s exited by itself (%v); restarting it; its last lines:\n%s", r.replica, err, r.Tail(5))
				replicas[n] = edl.start(r.replica)
			}
		}
	}

	// The kills. Right after a leader dies its lease still names it, so
	// asking for the leader then finds none alive; and a replica just
	// restarted has not joined the election yet. Then either replica goes.
	var leaderKills, standbyKills, otherKills int
	var lastKill time.Time
	for i := range kills {
		select {
		case <-ctx.Done():
			t.Fatalf("the test ran out of time after %d kills", i)
		case <-time.After(between(rng, 500*time.Millisecond, 3*time.Second)):
		}
		restartExited()
		holder := leaseHolder(ctx, plane, leaderLeaseNamespace)
		wantLeader := rng.IntN(2) == 0
		victim, role := rng.IntN(len(replicas)), "either: no live leader"
		if !wantLeader {
			role = "either: not in the election yet"
		}
		for n, r := range replicas {
			if id := r.Identity(); id != "" && (id == holder) == wantLeader {
				victim, role = n, "standby"
				if wantLeader {
					role = "leader"
				}
				break
			}
		}
		r := replicas[victim]
		r.Kill()
		lastKill = time.Now()
		switch role {
		case "leader":
			leaderKills++
		case "standby":
			standbyKills++
		default:
			otherKills++
		}
		t.Logf("kill %d/%d: SIGKILL replica %s (%s, up %s)", i+1, kills, r.replica, role, lastKill.Sub(r.Started()).Round(10*time.Millisecond))
		replicas[victim] = edl.start(r.replica)
	}

	// Convergence: the load holds still at loadHigh; every job must run all
	// the trainers its ReplicaSet asks for, the load must run whole, and no
	// trainer count may change for 5 s.
	stopLoad()
	toggles := <-loadDone
	require.NoError(t, scaleDeployment(ctx, plane, loadNS, "load", loadHigh))
	var (
		converged time.Time // since when everything has held
		state     string    // what was last seen not to hold
		reported  = time.Now()
	)
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		restartExited()
		now := time.Now()
		s := convergedState(ctx, plane, tj, jobsNS, loadNS, loadHigh, jobCount)
		if ctx.Err() == nil { // keep what held up the wait, not how it ended
			state = s
		}
		if s != "" && now.Sub(reported) >= 10*time.Second {
			reported = now
			t.Logf("%s after the last kill: %s", now.Sub(lastKill).Round(time.Second), s)
		}
		if s != "" {
			converged = time.Time{}
			return false, nil
		}
		if converged.IsZero() {
			converged = now
		}
		if last := bounds.quietSince(); last.After(converged) {
			converged = last
		}
		return now.Sub(converged) >= 5*time.Second, nil
	})
	require.NoError(t, err, "no convergence within 2 min of the last kill: %s\n%s", state, describeChaos(plane, jobsNS, loadNS))
	convergence := max(converged.Sub(lastKill), 0)

	// Exactly the objects of each job, each controlled by it.
	for name := range jobs {
		for _, label := range []string{v1.LabelTrainer, v1.LabelPserver, v1.LabelMaster} {
			want := 1
			if label == v1.LabelMaster {
				want = 0 // plain jobs run no master
			}
			selector := labels.SelectorFromSet(labels.Set{label: name}).String()
			rsList, err := plane.Client.AppsV1().ReplicaSets(jobsNS).List(ctx, metav1.ListOptions{LabelSelector: selector})
			require.NoError(t, err)
			assert.Len(t, rsList.Items, want, "ReplicaSets of job %s labelled %s", name, label)
			svcList, err := plane.Client.CoreV1().Services(jobsNS).List(ctx, metav1.ListOptions{LabelSelector: selector})
			require.NoError(t, err)
			wantSvc := 0
			if label == v1.LabelPserver {
				wantSvc = 1
			}
			assert.Len(t, svcList.Items, wantSvc, "Services of job %s labelled %s", name, label)
		}
	}
	rsList, err := plane.Client.AppsV1().ReplicaSets(jobsNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, rsList.Items, 2*jobCount, "ReplicaSets in %s", jobsNS)
	svcList, err := plane.Client.CoreV1().Services(jobsNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, svcList.Items, jobCount, "Services in %s", jobsNS)
	owners := map[types.UID]bool{}
	for _, rs := range rsList.Items {
		ref := metav1.GetControllerOf(&rs)
		if assert.NotNil(t, ref, "ReplicaSet %s has no controller", rs.Name) && assert.Contains(t, jobs, ref.Name, "ReplicaSet %s", rs.Name) {
			assert.Equal(t, jobs[ref.Name].UID, ref.UID, "ReplicaSet %s is controlled by another incarnation of job %s", rs.Name, ref.Name)
			assert.Equal(t, "TrainingJob", ref.Kind, "ReplicaSet %s", rs.Name)
		}
		owners[rs.UID] = true
	}
	for _, svc := range svcList.Items {
		ref := metav1.GetControllerOf(&svc)
		if assert.NotNil(t, ref, "Service %s has no controller", svc.Name) && assert.Contains(t, jobs, ref.Name, "Service %s", svc.Name) {
			assert.Equal(t, jobs[ref.Name].UID, ref.UID, "Service %s", svc.Name)
		}
	}
	pods, err := plane.Client.CoreV1().Pods(jobsNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, pod := range pods.Items {
		ref := metav1.GetControllerOf(&pod)
		assert.True(t, ref != nil && owners[ref.UID], "pod %s is not controlled by a job's ReplicaSet", pod.Name)
	}

	// Never outside [min, max], at any version the watch saw.
	bounds.mu.Lock()
	versions, violations, ups, downs := bounds.versions, bounds.violations, bounds.ups, bounds.downs
	bounds.mu.Unlock()
	assert.GreaterOrEqual(t, versions, 2*jobCount, "the watch saw every ReplicaSet at least once")
	assert.Empty(t, violations, "%d writes of ReplicaSet counts outside the job's bounds:\n%s", len(violations), strings.Join(violations, "\n"))

	runs := edl.all()
	for i, r := range runs {
		out := r.Log()
		assert.NotContains(t, out, "panic", "run %d of replica %s", i, r.replica)
		assert.NotContains(t, out, "lvl=crit", "run %d of replica %s", i, r.replica)
	}
	t.Logf("chaos: %d kills (%d of the leader, %d of the standby, %d of either, with no live leader or a replica not in the election yet), %d self-exits, %d edl runs, %d load toggles; "+
		"trainer counts changed %d times up and %d down (%d ReplicaSet versions seen)",
		kills, leaderKills, standbyKills, otherKills, selfExits, len(runs), toggles, ups, downs, versions)
	t.Logf("converged %s after the last kill (target 30s); test ran %s", convergence.Round(100*time.Millisecond), time.Since(began).Round(time.Second))
}

// convergedState returns what does not yet hold for the cluster to be
// converged, or "" when everything does: each job Running with its status
// counting what its trainer ReplicaSet asks for, every trainer ReplicaSet
// observed and all its replicas ready, and the load all running.
func convergedState(ctx context.Context, plane *framework.ControlPlane, tj tjclient.Interface, jobsNS, loadNS string, load int32, jobCount int) string {
	jobs, err := tj.PaddlepaddleV1().TrainingJobs(jobsNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	if len(jobs.Items) != jobCount {
		return fmt.Sprintf("%d jobs", len(jobs.Items))
	}
	for _, job := range jobs.Items {
		rs, err := plane.Client.AppsV1().ReplicaSets(jobsNS).Get(ctx, v1.ReplicaSetName(job.Name, v1.RoleTrainer), metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		want := ptr.Deref(rs.Spec.Replicas, 1)
		switch {
		case job.Status.Phase != v1.PhaseRunning:
			return fmt.Sprintf("job %s is %s: %s", job.Name, job.Status.Phase, job.Status.Message)
		case rs.Status.ObservedGeneration != rs.Generation || rs.Status.Replicas != want || rs.Status.ReadyReplicas != want:
			return fmt.Sprintf("ReplicaSet %s: %d of %d replicas ready, %d exist", rs.Name, rs.Status.ReadyReplicas, want, rs.Status.Replicas)
		case job.Status.Trainers.Desired != want || job.Status.Trainers.Ready != want:
			return fmt.Sprintf("job %s counts trainers %s, its ReplicaSet asks for %d", job.Name, job.Status.Trainers.Summary, want)
		}
	}
	d, err := plane.Client.AppsV1().Deployments(loadNS).Get(ctx, "load", metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if d.Status.ReadyReplicas != load || d.Status.Replicas != load {
		return fmt.Sprintf("load: %d of %d pods ready, %d exist", d.Status.ReadyReplicas, load, d.Status.Replicas)
	}
	return ""
}

// describeChaos lists the trainer ReplicaSets and every pod that is not
// ready, for a failure message.
func describeChaos(plane *framework.ControlPlane, namespaces ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, ns := range namespaces {
		if rsList, err := plane.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, rs := range rsList.Items {
				fmt.Fprintf(&b, "ReplicaSet %s/%s: spec %d, %d exist, %d ready, generation %d observed %d\n", ns, rs.Name,
					ptr.Deref(rs.Spec.Replicas, 1), rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Generation, rs.Status.ObservedGeneration)
			}
		}
		pods, err := plane.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			ready := false
			var conditions []string
			for _, c := range p.Status.Conditions {
				ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
				conditions = append(conditions, fmt.Sprintf("%s=%s %s %s", c.Type, c.Status, c.Reason, c.Message))
			}
			if !ready || p.DeletionTimestamp != nil {
				fmt.Fprintf(&b, "pod %s/%s: node %q phase %s nominated %q deleting %v created %s conditions %q\n", ns, p.Name, p.Spec.NodeName,
					p.Status.Phase, p.Status.NominatedNodeName, p.DeletionTimestamp != nil, p.CreationTimestamp.Format(time.TimeOnly), conditions)
			}
		}
	}
	return b.String()
}
