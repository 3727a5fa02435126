package cluster

import "k8s.io/apimachinery/pkg/api/resource"

// maxAmount caps every quantity the snapshot reads, so that a request of
// 9223372036854775807 CPU saturates instead of wrapping to a negative
// number, and thousands of capped amounts still sum without overflow. It is
// about 10^15: a petabyte of memory, or a trillion cores in millicores.
const maxAmount = 1 << 50

var maxQuantity = resource.NewQuantity(maxAmount, resource.DecimalSI)

// saturatingValue is q in whole units, rounded up, within [-maxAmount,
// maxAmount].
func saturatingValue(q resource.Quantity) int64 {
	switch {
	case q.Cmp(*maxQuantity) > 0:
		return maxAmount
	case q.Sign() < 0:
		neg := q.DeepCopy()
		neg.Neg()
		return -saturatingValue(neg)
	}
	return q.Value()
}

// saturatingMilli is q in thousandths, rounded up, within [-maxAmount,
// maxAmount].
func saturatingMilli(q resource.Quantity) int64 {
	switch {
	case q.Sign() < 0:
		neg := q.DeepCopy()
		neg.Neg()
		return -saturatingMilli(neg)
	case q.Cmp(*resource.NewMilliQuantity(maxAmount, resource.DecimalSI)) > 0:
		return maxAmount
	}
	return q.MilliValue()
}
