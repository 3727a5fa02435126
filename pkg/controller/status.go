package controller

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// observed is what the listers hold about one job.
type observed struct {
	// replicaSets are the job's own ReplicaSets by role; a missing role has none yet.
	replicaSets map[v1.Role]*appsv1.ReplicaSet
	// services are the job's own Services by role; a missing role has none yet.
	services map[v1.Role]*corev1.Service
	// pods are the job's pods by role.
	pods map[v1.Role][]*cluster.Pod
	// blocked names the objects of the job's names that it does not control.
	blocked []string
	// queued: the job waits for admission ([isQueued], [Controller.ensureUngated]).
	queued bool
	// refused are the API server's refusals of the job's objects: the
	// creates and patches of this sync, and the pods its ReplicaSets could
	// not create.
	refused []refusal
	// tried: this sync created and patched what the job needs (it was not
	// blocked and had not finished), so no refusal means none is left.
	tried bool
	// now is when the listers were read: a resize's cost is measured to it.
	now time.Time
	// resize is the job's status.resize as computed ([resizeStatus]).
	resize v1.ResizeStatus
	// progress is the data of the job's progress ConfigMap; nil without one.
	progress map[string]string
}

// verdict is the phase a job's pods put it in, with the reason and message.
type verdict struct {
	phase   v1.TrainingJobPhase
	reason  string
	message string
}

// computeStatus derives a job's status from what was observed. It is pure:
// the same inputs give the same status, and it writes nothing. Succeeded and
// Failed are final.
func computeStatus(job *v1.TrainingJob, obs observed, roles []v1.Role) v1.TrainingJobStatus {
	status := *job.Status.DeepCopy()
	status.ObservedGeneration = job.Generation
	status.Master = replicaStatus(obs.replicaSets[v1.RoleMaster], obs.pods[v1.RoleMaster])
	status.Pservers = replicaStatus(obs.replicaSets[v1.RolePserver], obs.pods[v1.RolePserver])
	status.Trainers = replicaStatus(obs.replicaSets[v1.RoleTrainer], obs.pods[v1.RoleTrainer])

	// A finished job's resizes and failures stay as they were when it
	// finished: its trainers' ends after that are its teardown.
	ended := status.Phase == v1.PhaseSucceeded || status.Phase == v1.PhaseFailed
	if frameworks.Training(&job.Spec) != nil && !ended {
		status.Resize = resizeStatus(job, status.Trainers, obs.pods, obs.now)
		obs.resize = status.Resize
	}
	if obs.progress != nil {
		status.Progress = progressStatus(job, obs)
	}
	v := judge(job, obs, roles)
	if ended {
		v = verdict{status.Phase, status.Reason, status.Message}
	}
	status.Phase, status.Reason, status.Message = v.phase, v.reason, v.message
	setConditions(&status, job.Generation, v, obs)
	setQueued(&status, job, obs.queued)
	setSuspended(&status, job, v.phase == v1.PhaseSucceeded || v.phase == v1.PhaseFailed)
	if job.Spec.Suspend {
		// Suspending a job that did not start in time lets it try afresh
		// once resumed.
		status.Requeues, status.RetryAfter = 0, nil
	}
	if job.Spec.FaultTolerant {
		setRoleFailing(&status, job, obs)
	}
	return status
}

// judge decides the phase from the pods, in order of precedence: a success,
// a failure, an object in the way, missing objects, then how far the pods got.
// A job succeeds when a container of its framework's Ender role exits 0 (a
// trainer; a Horovod job's launcher, in the master pod).
func judge(job *v1.TrainingJob, obs observed, roles []v1.Role) verdict {
	ender := v1.RoleTrainer
	tr := frameworks.Training(&job.Spec)
	if tr != nil {
		ender = tr.Ender
	}
	if e := findExit(obs.pods[ender], func(code int32) bool { return code == 0 }); e != nil {
		return verdict{v1.PhaseSucceeded, v1.ReasonSucceeded, fmt.Sprintf("%s pod %s container %s exited with code 0", ender.Name(), e.pod, e.container)}
	}
	if tr != nil {
		if v, failed := overBudget(job, obs.resize); failed {
			return v
		}
	} else if !job.Spec.FaultTolerant {
		nonZero := func(code int32) bool { return code != 0 }
		if e := findExit(obs.pods[v1.RoleTrainer], nonZero); e != nil {
			return verdict{v1.PhaseFailed, v1.ReasonTrainerFailed, e.failure("trainer")}
		}
		if e := findExit(obs.pods[v1.RolePserver], nonZero); e != nil {
			return verdict{v1.PhaseFailed, v1.ReasonPserverFailed, e.failure("pserver")}
		}
	} else {
		// The bound of trainer.max-restarts holds for every role: a master
		// or pserver that keeps crashing fails the job as a trainer does.
		for _, role := range roles {
			if msg := tooManyRestarts(role, obs.pods[role], job.Spec.TrainerMaxRestarts()); msg != "" {
				return verdict{v1.PhaseFailed, v1.ReasonTooManyRestarts, msg}
			}
		}
	}
	if job.Spec.Suspend {
		return suspendedVerdict(obs, roles)
	}
	if len(obs.blocked) > 0 {
		return verdict{v1.PhasePending, v1.ReasonBlocked, blockedMessage(obs.blocked)}
	}
	if obs.queued {
		return queuedVerdict(job)
	}
	// A job runs only with all of its ReplicaSets and Services.
	for _, role := range roles {
		if obs.replicaSets[role] == nil || (role != v1.RoleTrainer && obs.services[role] == nil) {
			if refused := objectRefusals(obs.refused); len(refused) > 0 {
				return verdict{v1.PhasePending, v1.ReasonChildRefused, refusalMessage(refused)}
			}
			return verdict{v1.PhaseCreating, v1.ReasonCreating, "creating the job's ReplicaSets and Services"}
		}
	}

	trainersRunning := countPods(obs.pods[v1.RoleTrainer], isRunning)
	pserversReady := countPods(obs.pods[v1.RolePserver], isReady)
	mastersReady := countPods(obs.pods[v1.RoleMaster], isReady)
	masterOK := !slices.Contains(roles, v1.RoleMaster) || mastersReady > 0
	if masterOK && pserversReady >= job.Spec.Pserver.MinInstance && trainersRunning >= job.Spec.Trainer.MinInstance {
		return verdict{v1.PhaseRunning, v1.ReasonRunning, fmt.Sprintf("%d trainers running (min %d, max %d), %d pservers ready",
			trainersRunning, job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance, pserversReady)}
	}
	if len(obs.refused) > 0 {
		// The objects exist, but the API server refuses their pods (a
		// ResourceQuota, an admission policy).
		return verdict{v1.PhasePending, v1.ReasonChildRefused, refusalMessage(obs.refused)}
	}
	if job.Spec.FaultTolerant {
		if f := failingRole(obs); f != nil {
			return verdict{v1.PhaseCreating, f.reason(), f.message(job) + "; the autoscaler leaves the job alone until it is Running again"}
		}
	}
	var unschedulable []*cluster.Pod
	for _, role := range roles {
		for _, pod := range obs.pods[role] {
			if isUnschedulable(pod) {
				unschedulable = append(unschedulable, pod)
			}
		}
	}
	if len(unschedulable) > 0 {
		return verdict{v1.PhasePending, v1.ReasonUnschedulable, fmt.Sprintf("%d pods cannot be scheduled yet, e.g. %s: %s",
			len(unschedulable), unschedulable[0].Name, unschedulableMessage(unschedulable[0]))}
	}
	return verdict{v1.PhaseCreating, v1.ReasonPodsStarting, fmt.Sprintf("waiting for pods: %d/%d trainers running, %d/%d pservers ready",
		trainersRunning, job.Spec.Trainer.MinInstance, pserversReady, job.Spec.Pserver.MinInstance)}
}

// setCondition sets one condition of the status, True when ok.
func setCondition(status *v1.TrainingJobStatus, generation int64, kind string, ok bool, reason, message string) {
	c := metav1.Condition{Type: kind, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: generation}
	if ok {
		c.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

func setConditions(status *v1.TrainingJobStatus, generation int64, v verdict, obs observed) {
	set := func(kind string, ok bool, reason, message string) {
		setCondition(status, generation, kind, ok, reason, message)
	}
	set(v1.ConditionReady, v.phase == v1.PhaseRunning, v.reason, v.message)
	if len(obs.blocked) > 0 {
		set(v1.ConditionBlocked, true, v1.ReasonBlocked, blockedMessage(obs.blocked))
	} else if meta.FindStatusCondition(status.Conditions, v1.ConditionBlocked) != nil {
		set(v1.ConditionBlocked, false, v1.ReasonNotBlocked, "every object of the job is controlled by it")
	}
	// ChildrenAccepted appears with the first refusal, and turns True once
	// a sync that tried everything met none.
	if len(obs.refused) > 0 {
		set(v1.ConditionChildrenAccepted, false, obs.refused[0].reason, refusalMessage(obs.refused))
	} else if obs.tried && meta.FindStatusCondition(status.Conditions, v1.ConditionChildrenAccepted) != nil {
		set(v1.ConditionChildrenAccepted, true, v1.ReasonAccepted, "the API server accepted every object of the job")
	}
	switch v.phase {
	case v1.PhaseSucceeded:
		set(v1.ConditionComplete, true, v.reason, v.message)
	case v1.PhaseFailed:
		set(v1.ConditionFailed, true, v.reason, v.message)
	}
}

func blockedMessage(blocked []string) string {
	msg := "not controlled by this job, left untouched: " + blocked[0]
	for _, b := range blocked[1:] {
		msg += ", " + b
	}
	return msg
}

// replicaStatus counts one role's replicas.
func replicaStatus(rs *appsv1.ReplicaSet, pods []*cluster.Pod) v1.ReplicaStatus {
	var s v1.ReplicaStatus
	if rs != nil && rs.Spec.Replicas != nil {
		s.Desired = *rs.Spec.Replicas
	}
	s.Current = countPods(pods, isActive)
	s.Ready = countPods(pods, isReady)
	s.Summary = strconv.Itoa(int(s.Ready)) + "/" + strconv.Itoa(int(s.Desired))
	return s
}

func countPods(pods []*cluster.Pod, pred func(*cluster.Pod) bool) int32 {
	var n int32
	for _, p := range pods {
		if pred(p) {
			n++
		}
	}
	return n
}

// isActive: the pod exists, is not being deleted and has not finished.
func isActive(p *cluster.Pod) bool {
	return p.DeletionTimestamp == nil && p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed
}

// notEnded: the pod is there and its containers have not ended for good
// (it may be being deleted).
func notEnded(p *cluster.Pod) bool {
	return p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed
}

func isRunning(p *cluster.Pod) bool {
	return p.DeletionTimestamp == nil && p.Phase == corev1.PodRunning
}

func isReady(p *cluster.Pod) bool {
	return isRunning(p) && p.Ready
}

// isUnschedulable: the scheduler tried and found no node for the pod.
func isUnschedulable(p *cluster.Pod) bool {
	return p.NodeName == "" && p.DeletionTimestamp == nil && p.Unschedulable()
}

func unschedulableMessage(p *cluster.Pod) string {
	if p.Scheduled == nil {
		return ""
	}
	return p.Scheduled.Message
}

// exit is a container termination.
type exit struct {
	pod, container string
	code           int32
}

func (e *exit) failure(role string) string {
	return fmt.Sprintf("%s pod %s container %s exited with code %d; the job is not fault tolerant", role, e.pod, e.container, e.code)
}

// findExit returns the first termination (pods by name, for a stable answer)
// whose exit code matches want, in a container's current or last state.
// Pods being deleted are left out: a trainer stopped by a scale-down may
// exit 0 or 143, and neither says anything about the job.
func findExit(pods []*cluster.Pod, want func(int32) bool) *exit {
	sorted := append([]*cluster.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.ContainerStatuses {
			for _, t := range []*cluster.Termination{cs.Terminated, cs.LastTerminated} {
				if t != nil && want(t.ExitCode) {
					return &exit{pod: p.Name, container: cs.Name, code: t.ExitCode}
				}
			}
		}
	}
	return nil
}

// exitCode is the code of the container's current, else last, termination.
func exitCode(p *cluster.Pod, container string) int32 {
	for _, cs := range p.ContainerStatuses {
		if cs.Name != container {
			continue
		}
		if t := cs.Terminated; t != nil {
			return t.ExitCode
		}
		if t := cs.LastTerminated; t != nil {
			return t.ExitCode
		}
	}
	return 0
}

// tooManyRestarts names the first pod of the role whose containers restarted
// more than max times, or returns "".
func tooManyRestarts(role v1.Role, pods []*cluster.Pod, maxRestarts int32) string {
	sorted := append([]*cluster.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		for _, cs := range p.ContainerStatuses {
			if cs.RestartCount > maxRestarts {
				return fmt.Sprintf("%s pod %s container %s restarted %d times, more than max-restarts %d; last exit code %d",
					role.Name(), p.Name, cs.Name, cs.RestartCount, maxRestarts, exitCode(p, cs.Name))
			}
		}
	}
	return ""
}

// roleFailure is a master or pserver container of a fault-tolerant job that
// exited non-zero and whose pod is not ready: it crash-loops, or waits to.
type roleFailure struct {
	role           v1.Role
	pod, container string
	code           int32
	exitReason     string // the kubelet's reason of the termination: Error, OOMKilled, ...
	restarts       int32
	waiting        string // the container's waiting reason, e.g. CrashLoopBackOff
}

func (f *roleFailure) reason() string {
	if f.role == v1.RoleMaster {
		return v1.ReasonMasterFailing
	}
	return v1.ReasonPserverFailing
}

func (f *roleFailure) message(job *v1.TrainingJob) string {
	msg := fmt.Sprintf("%s pod %s container %s exited with code %d", f.role.Name(), f.pod, f.container, f.code)
	if f.exitReason != "" {
		msg += " (" + f.exitReason + ")"
	}
	if f.waiting != "" {
		msg += ", " + f.waiting
	}
	return msg + fmt.Sprintf("; restarted %d times, the job fails after more than trainer.max-restarts %d", f.restarts, job.Spec.TrainerMaxRestarts())
}

// failingRole finds the first master, then pserver, pod (by name) that is
// not ready and whose container's current or last termination was non-zero.
// Pods being deleted are left out.
func failingRole(obs observed) *roleFailure {
	for _, role := range []v1.Role{v1.RoleMaster, v1.RolePserver} {
		sorted := append([]*cluster.Pod(nil), obs.pods[role]...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		for _, p := range sorted {
			if p.DeletionTimestamp != nil || isReady(p) {
				continue
			}
			for _, cs := range p.ContainerStatuses {
				t := cs.Terminated
				if t == nil {
					t = cs.LastTerminated
				}
				if t == nil || t.ExitCode == 0 {
					continue
				}
				f := &roleFailure{role: role, pod: p.Name, container: cs.Name, code: t.ExitCode, exitReason: t.Reason, restarts: cs.RestartCount}
				f.waiting = cs.Waiting
				return f
			}
		}
	}
	return nil
}

// setRoleFailing sets RoleFailing while a master or pserver fails; once it
// was set, it turns False when none does.
func setRoleFailing(status *v1.TrainingJobStatus, job *v1.TrainingJob, obs observed) {
	if f := failingRole(obs); f != nil {
		setCondition(status, job.Generation, v1.ConditionRoleFailing, true, f.reason(), f.message(job))
	} else if meta.FindStatusCondition(status.Conditions, v1.ConditionRoleFailing) != nil {
		setCondition(status, job.Generation, v1.ConditionRoleFailing, false, v1.ReasonNoRoleFailing, "no master or pserver pod is failing")
	}
}
