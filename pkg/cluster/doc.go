// Package cluster keeps an incrementally updated account of the cluster's
// schedulable capacity and of what pods ask of it, for the autoscaler.
//
// A Tracker is fed by pod and node informer events: every add, update and
// delete subtracts the object's previous contribution and adds its new one, so
// reading it never lists the cluster (the original EDL listed every pod and
// node each cycle). Its InquiryResource hands out a [snapshot.Snapshot] that the
// planner may keep and read without holding a lock: the tracker never writes
// into a Snapshot it handed out. Each Snapshot shares the nodes, jobs and
// lists that did not change with the previous one, so a cycle in which nothing
// changed copies nothing but the totals. A Snapshot is read-only (the
// original's dry run wrote into the per-node maps it shared with the caller,
// corrupting them); DeepCopy gives one to modify. The snapshot types live in
// package snapshot, which imports no client-go, so that the planner reading
// them cannot reach the API.
//
// Requests are counted the way kube-scheduler counts them: the larger of the
// sum of app containers (plus restartable init "sidecar" containers) and the
// largest init container, plus the pod overhead (the original summed init
// containers).
package cluster
