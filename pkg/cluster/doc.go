// Package cluster keeps an incrementally updated account of the cluster's
// schedulable capacity and of what pods ask of it, for the autoscaler.
//
// A Tracker is fed by pod and node informer events: every add, update and
// delete subtracts the object's previous contribution and adds its new one, so
// reading it never lists the cluster (the original EDL listed every pod and
// node each cycle). Its InquiryResource hands out a Snapshot, a deep copy, so
// the planner may keep and read it without holding a lock and without being
// able to corrupt the live aggregates (the original's dry run wrote into the
// per-node maps it shared with the caller).
//
// Requests are counted the way kube-scheduler counts them: the larger of the
// sum of app containers (plus restartable init "sidecar" containers) and the
// largest init container, plus the pod overhead (the original summed init
// containers).
package cluster
