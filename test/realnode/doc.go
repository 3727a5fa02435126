// Package realnode tests EDL where a process must really run: on a control
// plane with the real node framework.RealNodeName (kubelet, containerd,
// kube-proxy and CoreDNS on this machine), pods resolve Services and reach
// each other, EDL installs with `kubectl apply --server-side -k .` and runs as its
// Deployment's pod, trainers get their environment, SIGTERM and grace
// period, a torchrun job trains through its resizes, a Horovod job's hosts
// file drops each trainer before its SIGTERM, and the node leaves nothing
// behind when it stops.
//
// The tests need root and the tools framework.RealNodeMissing names
// (hack/real-node-deps.sh installs them, hack/images.sh build makes the
// images). Without them each test skips with the one line that says what is
// missing — unless EDL_REQUIRE_REAL_NODE is set, as make test sets it for
// root, and then they fail.
//
// One control plane with the real node serves every test of the package
// (a machine holds one real node at a time); TestZStopLeavesNothing, the
// last, stops it and checks what is left.
package realnode
