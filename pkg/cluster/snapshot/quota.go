package snapshot

import "math"

// Unlimited is a Quota dimension without a hard limit.
const Unlimited = math.MaxInt64

// Quota is the room a namespace's ResourceQuotas leave for new pods: hard
// minus used, the smallest over the namespace's quotas, per dimension;
// Unlimited where no quota sets one. Quotas with scopes or a scope selector
// apply to some pods only and are not modelled.
type Quota struct {
	// Requests is what requests.cpu (or cpu), requests.memory (or memory)
	// and requests.<gpu> leave; Limits what limits.cpu and limits.memory
	// leave (GPU limits equal requests).
	Requests, Limits Resources
	// Pods is what pods (or count/pods) leaves.
	Pods int64
}

// NoQuota is the Quota of a namespace without ResourceQuotas.
var NoQuota = Quota{
	Requests: Resources{CPUMilli: Unlimited, MemoryMega: Unlimited, GPU: Unlimited},
	Limits:   Resources{CPUMilli: Unlimited, MemoryMega: Unlimited, GPU: Unlimited},
	Pods:     Unlimited,
}

// Tighter returns the smaller room of a and b in every dimension.
func (a Quota) Tighter(b Quota) Quota {
	return Quota{
		Requests: Resources{CPUMilli: min(a.Requests.CPUMilli, b.Requests.CPUMilli),
			MemoryMega: min(a.Requests.MemoryMega, b.Requests.MemoryMega), GPU: min(a.Requests.GPU, b.Requests.GPU)},
		Limits: Resources{CPUMilli: min(a.Limits.CPUMilli, b.Limits.CPUMilli),
			MemoryMega: min(a.Limits.MemoryMega, b.Limits.MemoryMega), GPU: min(a.Limits.GPU, b.Limits.GPU)},
		Pods: min(a.Pods, b.Pods),
	}
}
