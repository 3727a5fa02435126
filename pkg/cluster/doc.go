// Package cluster keeps an incrementally updated snapshot of the cluster's
// schedulable capacity and of what pods ask of it, for the autoscaler.
//
// The snapshot is fed by pod and node informer events: every add, update and
// delete subtracts the object's previous contribution and adds its new one, so
// reading the snapshot never lists the cluster (defect 7 of the original EDL
// listed every pod and node each cycle). InquiryResource hands out a deep copy,
// so the planner may keep and read it without holding a lock and without being
// able to corrupt the live aggregates (defect 1).
//
// Requests are counted the way kube-scheduler counts them: the larger of the
// sum of app containers (plus restartable init "sidecar" containers) and the
// largest init container, plus the pod overhead (defect 8 summed init
// containers).
package cluster
