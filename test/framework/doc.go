// Package framework runs a real Kubernetes control plane for EDL's
// integration tests and local demo cluster: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler as local processes, with kwok
// playing the kubelets of fake nodes. Nothing runs in containers; the
// binaries come from hack/build-control-plane.sh (`make controlplane`).
//
// A test starts one with StartForTest, or a TestMain with Start, then talks
// to it through ControlPlane.Client, ControlPlane.Config or the kubeconfig
// file at ControlPlane.Kubeconfig. Every process listens on a free port of
// 127.0.0.1 only and dies with the process that started it.
//
// BinDir is $EDL_CONTROLPLANE_BIN (the Makefile exports it), else what the
// build script, found from the module's root (ModuleRoot), prints with
// --print-dir. A missing binary fails Start with "run `make
// controlplane`"; tests never skip.
//
// Start generates a CA, certificates (admin, system:kube-controller-manager,
// system:kube-scheduler) and a service-account key in Go into Dir/pki, with
// kubeconfigs, and runs every process on a random free port of 127.0.0.1
// below the kernel's ephemeral range (ip_local_port_range), on new ports if
// one is taken (three attempts). Children run in their own process group
// with Pdeathsig SIGKILL from a locked OS thread; in a test binary SIGINT,
// SIGTERM and SIGHUP stop them first. kube-apiserver runs with RBAC, a
// front-proxy client, --disable-admission-plugins=ServiceAccount and
// --endpoint-reconciler-type=none; kube-controller-manager with every
// non-cloud controller, --use-service-account-credentials and
// --node-monitor-period=1s, and, like kube-scheduler, no leader election.
//
// Nodes are Node objects annotated kwok.x-k8s.io/node=fake, with capacity
// and allocatable for cpu, memory, pods and nvidia.com/gpu, which kwok alone
// manages with the stages in test/kwok/stages (the
// edl.paddlepaddle.org/fake-exit-code annotation makes a pod's containers
// exit). AddNodes returns once a watch has seen every node Ready without a
// not-ready taint. With Options.RealNode, real-0 runs beside them
// (realnode.go), and SharedVolume gives a claim a volume of its disk.
//
// StopAPIServer and StartAPIServer restart kube-apiserver on the same port,
// with the same certificates and etcd data. Stop stops the clients, the API
// server, then etcd, and removes a temporary Dir (EDL_KEEP_CONTROLPLANE=1
// keeps it). Logs are in Dir/logs/<component>.log; LogTails(n) returns their
// ends, which StartForTest prints when the test fails. ApplyCRD creates or
// updates the CRDs of a YAML file and waits until each is Established.
//
// It is also the one way tests and tools build and run the edl binary.
// BuildEDL builds cmd/edl (static, -trimpath) once per process into
// _output/test/edl of the checkout, writing a file of its own and renaming
// it into place, so concurrent test packages never run a half-written
// binary. StartEDL starts it like the control plane's processes: in its own
// process group, killed with the test binary; with Detach, by setsid,
// outliving the caller (make demo leaves it running); its output to LogPath,
// else to memory; with StartupGrace an edl that exits at once is an error
// carrying the end of its log. StartEDLForTest also kills it when the test
// ends. The EDL it returns has Stop(grace) (SIGTERM, then SIGKILL), Signal,
// Kill, Wait, Exited, ExitedUnasked, Log, Tail, LastLine, WaitForLine and
// Identity; EDLIdentityLine and EDLServingLine match the log lines naming its
// lease identity and HTTP address.
package framework
