package cluster

import (
	"flag"
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// long runs the oracle over many more seeds: make fuzz sets it.
var long = flag.Bool("long", false, "run the snapshot oracle over 20,000 seeds")

// TestTrackerMatchesARecount is the snapshot's oracle: random sequences of
// pod and node events — pods created, bound, moved, made unschedulable,
// deleted gracefully or at once, finished; nodes added, cordoned, made
// NotReady, resized, deleted, in any order with their pods — leave the
// tracker with exactly what a tracker fed only the final objects reports,
// and with totals that a direct count over those objects agrees with.
// Snapshots are taken at random points along the way, as the autoscaler's
// cycles would, so the final one is built from what changed since the
// previous; no event may alter a snapshot already taken.
func TestTrackerMatchesARecount(t *testing.T) {
	seeds, events := 200, 300
	if *long {
		seeds = 20000
	}
	for seed := range int64(seeds) {
		r := rand.New(rand.NewSource(seed))
		live := newTracker(Config{})
		pods := map[string]*corev1.Pod{}
		nodes := map[string]*corev1.Node{}
		rv := 0
		var taken, copies []snapshot.Snapshot
		for e := 0; e < events; e++ {
			rv++
			if r.Intn(20) == 0 {
				snap := live.InquiryResource()
				taken, copies = append(taken, snap), append(copies, snap.DeepCopy())
			}
			switch k := r.Intn(10); {
			case k < 6:
				p := randomPod(r, rv)
				pods[p.Name] = p
				live.onPod(p)
			case k < 7:
				name := fmt.Sprintf("p%d", r.Intn(12))
				if p, ok := pods[name]; ok {
					delete(pods, name)
					live.onPodDelete(p)
				}
			case k < 9:
				n := randomNode(r, rv)
				nodes[n.Name] = n
				live.onNode(n)
			default:
				name := fmt.Sprintf("n%d", r.Intn(4))
				if n, ok := nodes[name]; ok {
					delete(nodes, name)
					live.onNodeDelete(n)
				}
			}
		}
		recount := newTracker(Config{})
		for _, n := range nodes {
			recount.onNode(n)
		}
		for _, p := range pods {
			recount.onPod(p)
		}
		got, want := live.InquiryResource(), recount.InquiryResource()
		require.Equal(t, want, got, "seed %d: the incremental tracker differs from a recount", seed)
		require.Equal(t, directCount(nodes, pods), [3]int64{got.CPUTotalMilli, got.CPURequestMilli, int64(got.NodeCount)},
			"seed %d: totals differ from a direct count", seed)
		for i := range taken {
			require.Equal(t, copies[i], taken[i], "seed %d: snapshot %d changed after it was taken", seed, i)
		}
	}
}

// directCount is allocatable CPU, requested CPU and the node count over the
// nodes that count, counted from the objects with no tracker involved.
func directCount(nodes map[string]*corev1.Node, pods map[string]*corev1.Pod) [3]int64 {
	var out [3]int64
	counted := map[string]bool{}
	for name, n := range nodes {
		if n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		counted[name] = true
		out[0] += n.Status.Allocatable.Cpu().MilliValue()
		out[2]++
	}
	for _, p := range pods {
		if counted[p.Spec.NodeName] && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out[1] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
	}
	return out
}

func randomPod(r *rand.Rand, rv int) *corev1.Pod {
	var muts []builders.PodOption
	switch r.Intn(4) {
	case 0:
		muts = append(muts, builders.TrainerOf(fmt.Sprintf("job%d", r.Intn(3))))
	case 1:
		muts = append(muts, builders.Label(v1.LabelTrainer, "job0")) // a stray: labelled, not owned
	case 2:
		muts = append(muts, builders.MemberOf("job1", v1.RolePserver))
	}
	muts = append(muts, builders.Requests(strconv.Itoa(1+r.Intn(4)), fmt.Sprintf("%dMi", 1+r.Intn(900))),
		builders.CreatedAfter(0), builders.PodRV(strconv.Itoa(rv)), builders.Priority(int32(r.Intn(3)*100)))
	switch r.Intn(6) {
	case 0:
		muts = append(muts, builders.Unbound(), builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."))
	case 1:
		muts = append(muts, builders.Phase(corev1.PodPending))
	case 2:
		muts = append(muts, builders.OnNode(fmt.Sprintf("n%d", r.Intn(5))), builders.Terminating())
	case 3:
		muts = append(muts, builders.OnNode(fmt.Sprintf("n%d", r.Intn(5))), builders.Phase([]corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed}[r.Intn(2)]))
	default:
		muts = append(muts, builders.OnNode(fmt.Sprintf("n%d", r.Intn(5)))) // n4 never exists
	}
	return builders.Pod(fmt.Sprintf("p%d", r.Intn(12)), muts...)
}

func randomNode(r *rand.Rand, rv int) *corev1.Node {
	var muts []builders.NodeOption
	switch r.Intn(4) {
	case 0:
		muts = append(muts, builders.Cordoned())
	case 1:
		muts = append(muts, builders.NodeNotReady())
	}
	muts = append(muts, builders.NodeRV(strconv.Itoa(rv)))
	return builders.Node(fmt.Sprintf("n%d", r.Intn(4)), strconv.Itoa(4+r.Intn(8)), "16Gi", muts...)
}
