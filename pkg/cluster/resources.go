package cluster

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// amounts is an exact resource amount: CPU in millicores, memory in bytes and
// GPUs. The tracker aggregates in these units and converts to MiB only when it
// reports, so that rounding never accumulates over thousands of events.
type amounts struct {
	cpuMilli int64
	memBytes int64
	gpu      int64
}

func (a *amounts) add(b amounts) {
	a.cpuMilli += b.cpuMilli
	a.memBytes += b.memBytes
	a.gpu += b.gpu
}

func (a *amounts) sub(b amounts) {
	a.cpuMilli -= b.cpuMilli
	a.memBytes -= b.memBytes
	a.gpu -= b.gpu
}

func maxAmounts(a, b amounts) amounts {
	return amounts{cpuMilli: max(a.cpuMilli, b.cpuMilli), memBytes: max(a.memBytes, b.memBytes), gpu: max(a.gpu, b.gpu)}
}

// ceilResources converts a per-pod amount to Resources rounding memory up, so
// that a planner fitting pods into floor-rounded free memory stays on the safe
// side.
func (a amounts) ceilResources() snapshot.Resources {
	return snapshot.Resources{CPUMilli: a.cpuMilli, MemoryMega: ceilDiv(a.memBytes, mebi), GPU: a.gpu}
}

// floorResources converts a node's amount to Resources rounding memory down,
// so that free memory is never overstated.
func (a amounts) floorResources() snapshot.Resources {
	return snapshot.Resources{CPUMilli: a.cpuMilli, MemoryMega: floorDiv(a.memBytes, mebi), GPU: a.gpu}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// resourceReader turns ResourceLists into amounts, knowing which extended
// resources count as GPUs.
type resourceReader struct {
	gpuNames []corev1.ResourceName
}

func (rr resourceReader) read(l corev1.ResourceList) amounts {
	var a amounts
	if len(l) == 0 {
		return a
	}
	if q, ok := l[corev1.ResourceCPU]; ok {
		a.cpuMilli = saturatingMilli(q)
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		a.memBytes = saturatingValue(q)
	}
	for _, n := range rr.gpuNames {
		if q, ok := l[n]; ok {
			a.gpu += saturatingValue(q)
		}
	}
	return a
}

// podRequestsAndLimits computes a pod's effective requests and limits the way
// kube-scheduler does (component-helpers' PodRequests/PodLimits rules):
//
//   - app containers are summed;
//   - a restartable init container (restartPolicy Always, a "sidecar") keeps
//     running next to the app containers, so it is added to that sum, and every
//     later init container runs alongside the sidecars started before it;
//   - the pod needs max(that sum, the largest init-container step), because
//     ordinary init containers run one at a time (the original EDL summed them);
//   - pod-level resources (spec.resources), when set for CPU or memory,
//     replace the container aggregate for that resource;
//   - the RuntimeClass overhead is added to requests, and to limits only where
//     a limit exists (an absent limit means unbounded, not zero).
//
// The in-place-resize refinement (max of spec and status.allocatedResources
// while a resize is pending) is not modelled: statuses are stripped.
func (rr resourceReader) podRequestsAndLimits(r *PodResources) (req, lim amounts) {
	for i := range r.Containers {
		req.add(rr.read(r.Containers[i].Requests))
		lim.add(rr.read(r.Containers[i].Limits))
	}
	var sidecarReq, sidecarLim, initReq, initLim amounts
	for i := range r.InitContainers {
		c := &r.InitContainers[i]
		cr, cl := rr.read(c.Requests), rr.read(c.Limits)
		if c.Sidecar {
			req.add(cr)
			lim.add(cl)
			sidecarReq.add(cr)
			sidecarLim.add(cl)
			initReq = maxAmounts(initReq, sidecarReq)
			initLim = maxAmounts(initLim, sidecarLim)
			continue
		}
		cr.add(sidecarReq)
		cl.add(sidecarLim)
		initReq = maxAmounts(initReq, cr)
		initLim = maxAmounts(initLim, cl)
	}
	req = maxAmounts(req, initReq)
	lim = maxAmounts(lim, initLim)

	if pl := r.Pod; pl != nil {
		if q, ok := pl.Requests[corev1.ResourceCPU]; ok {
			req.cpuMilli = saturatingMilli(q)
		}
		if q, ok := pl.Requests[corev1.ResourceMemory]; ok {
			req.memBytes = saturatingValue(q)
		}
		if q, ok := pl.Limits[corev1.ResourceCPU]; ok {
			lim.cpuMilli = saturatingMilli(q)
		}
		if q, ok := pl.Limits[corev1.ResourceMemory]; ok {
			lim.memBytes = saturatingValue(q)
		}
	}

	if len(r.Overhead) > 0 {
		o := rr.read(r.Overhead)
		req.add(o)
		if lim.cpuMilli > 0 {
			lim.cpuMilli += o.cpuMilli
		}
		if lim.memBytes > 0 {
			lim.memBytes += o.memBytes
		}
		if lim.gpu > 0 {
			lim.gpu += o.gpu
		}
	}
	return req, lim
}
