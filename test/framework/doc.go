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
// It is also the one way tests and tools build and run the edl binary:
// BuildEDL builds it once per process, StartEDL runs it and returns an EDL
// to stop, signal, kill, wait for and read the log of.
package framework
