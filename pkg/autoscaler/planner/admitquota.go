package planner

import (
	"fmt"
	"strconv"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// quotaUse is what a queued job's minimum takes from its namespace's
// ResourceQuotas: its pods, their requests and their limits.
type quotaUse struct {
	pods     int64
	req, lim vec
}

func gangUse(pods []gangPod) quotaUse {
	u := quotaUse{pods: int64(len(pods))}
	for _, g := range pods {
		u.req, u.lim = u.req.plus(g.req), u.lim.plus(g.lim)
	}
	return u
}

// quotaDim is one dimension of a quota, as people read it.
type quotaDim struct {
	name   string
	of     func(*snapshot.Quota) *int64
	amount func(quotaUse) int64
	format func(int64) string
}

var (
	formatCount = func(v int64) string { return strconv.FormatInt(v, 10) }
	formatCPU   = func(v int64) string { return snapshot.FormatMilli(v) + " CPU" }
	formatMiB   = func(v int64) string { return strconv.FormatInt(v, 10) + " MiB" }
	formatGPU   = func(v int64) string { return strconv.FormatInt(v, 10) + " GPU" }
)

// quotaDims are the dimensions the planner reads of a quota (cluster's
// quotaLeft), in the order a shortfall is reported.
var quotaDims = []quotaDim{
	{"pods", func(q *snapshot.Quota) *int64 { return &q.Pods }, func(u quotaUse) int64 { return u.pods }, formatCount},
	{"requests.cpu", func(q *snapshot.Quota) *int64 { return &q.Requests.CPUMilli }, func(u quotaUse) int64 { return u.req[resCPU] }, formatCPU},
	{"requests.memory", func(q *snapshot.Quota) *int64 { return &q.Requests.MemoryMega }, func(u quotaUse) int64 { return u.req[resMemory] }, formatMiB},
	{"requests of GPUs", func(q *snapshot.Quota) *int64 { return &q.Requests.GPU }, func(u quotaUse) int64 { return u.req[resGPU] }, formatGPU},
	{"limits.cpu", func(q *snapshot.Quota) *int64 { return &q.Limits.CPUMilli }, func(u quotaUse) int64 { return u.lim[resCPU] }, formatCPU},
	{"limits.memory", func(q *snapshot.Quota) *int64 { return &q.Limits.MemoryMega }, func(u quotaUse) int64 { return u.lim[resMemory] }, formatMiB},
}

// quotaFor returns the room namespace ns's quotas leave in this plan: the
// snapshot's, less what admissions and the queue's reservations took; growth
// spends from the same (startGrowth).
func (p *plan) quotaFor(ns string) *snapshot.Quota {
	if p.quotas == nil {
		p.quotas = map[string]*snapshot.Quota{}
	}
	q := p.quotas[ns]
	if q == nil {
		left := p.snap.Quota(ns)
		q = &left
		p.quotas[ns] = q
	}
	return q
}

// aboveHard says which hard limit of namespace ns's quotas the use exceeds,
// "" for none: such a job cannot start until the quota is raised.
func (p *plan) aboveHard(ns string, u quotaUse) string {
	hard := p.snap.HardQuota(ns)
	for _, d := range quotaDims {
		if h, need := *d.of(&hard), d.amount(u); h != snapshot.Unlimited && need > h {
			return fmt.Sprintf("needs %s of namespace %s's quota %s, above its hard limit of %s: it cannot start until the quota is raised",
				d.format(need), ns, d.name, d.format(h))
		}
	}
	return ""
}

// quotaShort says which quota of namespace ns has too little left for the
// use in this plan, "" for none.
func (p *plan) quotaShort(ns string, u quotaUse) string {
	left := p.quotaFor(ns)
	for _, d := range quotaDims {
		if l, need := *d.of(left), d.amount(u); l != snapshot.Unlimited && need > l {
			return fmt.Sprintf("namespace %s quota %s: %s left, the minimum needs %s", ns, d.name, d.format(max(l, 0)), d.format(need))
		}
	}
	return ""
}

// spendQuota takes the use from namespace ns's quota room in this plan.
func (p *plan) spendQuota(ns string, u quotaUse) {
	left := p.quotaFor(ns)
	for _, d := range quotaDims {
		if l := d.of(left); *l != snapshot.Unlimited {
			*l -= d.amount(u)
		}
	}
	if left.Limits.GPU != snapshot.Unlimited {
		left.Limits.GPU -= u.lim[resGPU]
	}
}
