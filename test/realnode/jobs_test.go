package realnode

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// What a test of a job's end waits for and watches, and what it shows
// when it fails.

// waitJobEnds waits up to bound for the job to be Succeeded or Failed, and
// returns it and when the test saw it end.
func waitJobEnds(t *testing.T, tj tjclient.Interface, ns, name string, bound time.Duration) (*v1.TrainingJob, time.Time) {
	t.Helper()
	var job *v1.TrainingJob
	var at time.Time
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, bound, true, func(ctx context.Context) (bool, error) {
		j, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		job, at = j, time.Now()
		return j.Status.Phase == v1.PhaseSucceeded || j.Status.Phase == v1.PhaseFailed, nil
	})
	var last string
	if job != nil {
		last = fmt.Sprintf("%s (%s): %s; failures %d", job.Status.Phase, job.Status.Reason, job.Status.Message, job.Status.Resize.Failures)
	}
	require.NoError(t, err, "the job %s/%s ends within %v; it is %s", ns, name, bound, last)
	return job, at
}

// waitJobEvent waits for an event of the job with the type and reason, and
// returns it.
func waitJobEvent(t *testing.T, cp *framework.ControlPlane, ns, job, kind, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	var seen []string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=TrainingJob,involvedObject.name=" + job})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
			if e.Type == kind && e.Reason == reason {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "a %s event %s for the job %s; its events:\n%s", kind, reason, job, strings.Join(seen, "\n"))
	return found
}

// rolePodsOf lists the live pods of one role of a job.
func rolePodsOf(t *testing.T, cp *framework.ControlPlane, ns, job string, role v1.Role) []corev1.Pod {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selectorOf(map[string]string{v1.LabelFor(role): job})})
	require.NoError(t, err)
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// watchPodRestarts records, from now on, the pods with the labels, each
// with the most restarts of its containers seen.
func watchPodRestarts(t *testing.T, cp *framework.ControlPlane, ns string, labels map[string]string) func() map[string]int32 {
	t.Helper()
	w, err := cp.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: selectorOf(labels)})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	restarts := map[string]int32{}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				mu.Lock()
				n := restarts[p.Name]
				for _, c := range p.Status.ContainerStatuses {
					n = max(n, c.RestartCount)
				}
				restarts[p.Name] = n
				mu.Unlock()
			}
		}
	}()
	return func() map[string]int32 {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(restarts)
	}
}

// containerRun is one run of a container that ended, as its pod's status said.
type containerRun struct {
	pod             string
	started, ended  time.Time
	code            int32
	reason, message string
}

// watchTerminations records, from now on, every run of a container of the
// pods with the labels that ended, and returns a function that lists them
// by their end.
func watchTerminations(t *testing.T, cp *framework.ControlPlane, ns string, labels map[string]string) func() []containerRun {
	t.Helper()
	w, err := cp.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: selectorOf(labels)})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	runs := map[string]containerRun{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			for _, c := range p.Status.ContainerStatuses {
				for _, term := range []*corev1.ContainerStateTerminated{c.State.Terminated, c.LastTerminationState.Terminated} {
					if term != nil {
						runs[p.Name+"/"+term.StartedAt.String()] = containerRun{pod: p.Name, started: term.StartedAt.Time, ended: term.FinishedAt.Time,
							code: term.ExitCode, reason: term.Reason, message: term.Message}
					}
				}
			}
			mu.Unlock()
		}
	}()
	return func() []containerRun {
		mu.Lock()
		defer mu.Unlock()
		var list []containerRun
		for _, r := range runs {
			list = append(list, r)
		}
		slices.SortFunc(list, func(a, b containerRun) int { return a.ended.Compare(b.ended) })
		return list
	}
}

// describeRuns lists runs, each with the end of its termination message.
func describeRuns(runs []containerRun) string {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "%s ran %s-%s, exited %d (%s); its message ends:\n%s\n", r.pod,
			r.started.Format(time.TimeOnly), r.ended.Format(time.TimeOnly), r.code, r.reason, indent(tail(r.message, 8)))
	}
	return b.String()
}

// countLines counts the lines equal to s.
func countLines(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// onFailure, when t fails, logs what a person needs to see why: the job's
// status, its events, and each of its pods' state with the end of the log
// of its current and of its previous run.
func onFailure(t *testing.T, cp *framework.ControlPlane, ns, job string) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the job %s/%s when the test failed:\n%s", ns, job, jobReport(cp, ns, job))
		}
	})
}

func jobReport(cp *framework.ControlPlane, ns, job string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var b strings.Builder
	tj, err := tjclient.NewForConfig(cp.Config)
	if err == nil {
		if j, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, job, metav1.GetOptions{}); err == nil {
			status, _ := yaml.Marshal(j.Status)
			fmt.Fprintf(&b, "status:\n%s", status)
		} else {
			fmt.Fprintf(&b, "status: %v\n", err)
		}
	}
	if evs, err := cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		b.WriteString("events:\n")
		slices.SortFunc(evs.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "  %s %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.TimeOnly), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
		return b.String()
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		fmt.Fprintf(&b, "pod %s: %s\n", p.Name, podState(p))
		for _, which := range [][]string{{"--previous"}, nil} {
			out, err := cp.Kubectl(ctx, append([]string{"-n", ns, "logs", p.Name, "--tail", "20"}, which...)...)
			if err != nil {
				out = err.Error()
			}
			fmt.Fprintf(&b, "  logs %s:\n%s\n", strings.Join(which, ""), indent(strings.TrimRight(out, "\n")))
		}
	}
	// edl's log of the job, from each replica (the leader among them).
	if edl, err := cp.Client.CoreV1().Pods(edlNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + edlApp}); err == nil {
		for _, p := range edl.Items {
			out, err := cp.Kubectl(ctx, "-n", edlNamespace, "logs", p.Name, "--tail", "2000")
			if err != nil {
				continue
			}
			var mine []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, ns+"/"+job) {
					mine = append(mine, l)
				}
			}
			fmt.Fprintf(&b, "%s's log of the job:\n%s\n", p.Name, indent(tail(strings.Join(mine, "\n"), 30)))
		}
	}
	return b.String()
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
