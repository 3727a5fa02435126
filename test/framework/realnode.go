package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The real node: one per machine, so its names, addresses and directories
// are fixed, and a run that died can be cleaned up by the next one
// (CleanRealNode) without knowing anything of it.
const (
	// RealNodeName is the real node's name.
	RealNodeName = "real-0"
	// RealNodeLabel marks the real node (value "true"), for a nodeSelector.
	RealNodeLabel = "edl.paddlepaddle.org/real-node"
	// RealNodeIP is the node's InternalIP, on an interface of its own:
	// kube-apiserver advertises it to the pods (the kubernetes Service),
	// kubelet and CoreDNS listen on it.
	RealNodeIP = "10.245.0.1"
	// realPodCIDR is where the bridge plugin's host-local IPAM takes pod IPs.
	realPodCIDR = "10.244.0.0/24"
	// DNSServiceIP is the kube-dns Service's ClusterIP, kubelet's clusterDNS.
	DNSServiceIP = "10.96.0.10"
	// nodeLink and bridgeLink are the interfaces the real node adds.
	nodeLink   = "edl-node0"
	bridgeLink = "edl-cni0"
	// realNodeVar and realNodeRun hold the node's state; CleanRealNode
	// unmounts whatever is mounted below them.
	realNodeVar = "/var/lib/edl-node"
	realNodeRun = "/run/edl-node"
	// RealNodeSocket is the node's containerd socket (ctr --address).
	RealNodeSocket = realNodeRun + "/containerd/containerd.sock"
	// PauseImage is the image every pod's sandbox runs (containerd's
	// sandbox_image); hack/images.sh builds it from the kubelet module.
	PauseImage = "registry.k8s.io/pause:3.10.2"
)

// KwokTaint is kwok's taint for fake nodes: beside a real node they carry
// it, so that pods that must really run stay off the phantoms unless they
// tolerate it.
var KwokTaint = corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}

// Component names of the real node's processes, for LogTail.
const (
	Containerd = "containerd"
	Kubelet    = "kubelet"
	KubeProxy  = "kube-proxy"
	CoreDNS    = "coredns"
)

// nodeBinaries are the binaries a real node runs besides the control plane's.
var nodeBinaries = []string{Kubelet, KubeProxy, CoreDNS}

// hostTools are what a real node needs from the machine: Debian's
// containerd, runc, containernetworking-plugins, iptables and iproute2
// (hack/real-node-deps.sh installs them).
var hostTools = []string{"/usr/bin/containerd", "/usr/bin/containerd-shim-runc-v2", "/usr/sbin/runc", "/usr/bin/ctr", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback", "/usr/sbin/iptables", "/usr/sbin/ip"}

// RealNodeMissing returns "" when this machine can run a real node, else one
// line saying what is missing: root, a tool (hack/real-node-deps.sh installs
// them) or one of binDir's node binaries.
func RealNodeMissing(binDir string) string {
	if os.Geteuid() != 0 {
		return "a real node needs root (kubelet, containerd, iptables); run as root"
	}
	var missing []string
	for _, t := range hostTools {
		if _, err := os.Stat(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return "a real node needs " + strings.Join(missing, ", ") + ": run hack/real-node-deps.sh (as root)"
	}
	for _, b := range nodeBinaries {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return "a real node needs " + filepath.Join(binDir, b) + ": run hack/build-control-plane.sh"
		}
	}
	return ""
}

// realNode is the real node's processes and what its start changed.
type realNode struct {
	dir     string // configuration files and logs, in the control plane's Dir
	lock    *os.File
	sysctls map[string]string // their values before the start, restored by stop
	// ports of CoreDNS's health and ready, and kube-proxy's healthz and
	// metrics, on 127.0.0.1.
	dnsHealth, dnsReady, proxyHealth, proxyMetrics int
}

func (r *realNode) path(name string) string { return filepath.Join(r.dir, name) }

// writeConfigs writes containerd's, the CNI network's, kubelet's, CoreDNS's
// and the kubeconfig every node component uses.
func (r *realNode) writeConfigs(cp *ControlPlane) error {
	if err := os.MkdirAll(filepath.Join(realNodeVar, "cni"), 0o755); err != nil {
		return err
	}
	files := map[string]string{
		r.path("containerd.toml"):                            containerdConfig,
		filepath.Join(realNodeVar, "cni", "10-edl.conflist"): cniConfig,
		r.path("kubelet.yaml"): fmt.Sprintf(kubeletConfig, cp.pki.caCert, DNSServiceIP, RealNodeIP,
			"unix://"+RealNodeSocket),
		r.path("Corefile"): fmt.Sprintf(corefile, RealNodeIP, r.dnsHealth, r.dnsReady, cp.Kubeconfig),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil { // #nosec G306 -- a test node's configuration
			return err
		}
	}
	return nil
}

// containerdConfig is Debian's containerd 1.6 with every path of its own.
// restrict_oom_score_adj: this machine's capability bounding set lacks
// CAP_SYS_RESOURCE, so no process may lower an OOM score, and runc fails
// every sandbox that asks to.
const containerdConfig = `version = 2
root = "` + realNodeVar + `/containerd"
state = "` + realNodeRun + `/containerd/state"
[grpc]
  address = "` + RealNodeSocket + `"
[ttrpc]
  address = "` + RealNodeSocket + `.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "` + realNodeVar + `/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + PauseImage + `"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "` + realNodeVar + `/cni"
`

// cniConfig is a bridge network without masquerading: pods talk to each
// other, to the node and to Services, never beyond the machine, and the
// plugin then writes no iptables rule.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "edl",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "` + bridgeLink + `",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "` + realNodeRun + `/ipam", "ranges": [[{"subnet": "` + realPodCIDR + `"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "loopback"}
  ]
}
`

// kubeletConfig is kubelet's configuration. failCgroupV1: false because
// this machine mounts cgroup v1, which kubelet 1.35+ refuses otherwise.
// Anonymous requests with AlwaysAllow let kube-apiserver reach the kubelet
// for logs and exec without a node certificate: fine for a local test
// cluster, never for a real one. The thresholds keep a small disk from
// evicting pods or collecting the preloaded images, which no registry
// could give back.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
  x509:
    clientCAFile: %q
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
clusterDNS: [%q]
resolvConf: ""
address: %q
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
containerRuntimeEndpoint: %q
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
nodeStatusUpdateFrequency: 5s
`

// corefile serves cluster.local from the API server, on the node's address
// only. Nothing is forwarded: this machine has no network beyond itself.
const corefile = `.:53 {
  bind %s
  errors
  health 127.0.0.1:%d
  ready 127.0.0.1:%d
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig %s
    pods insecure
    fallthrough in-addr.arpa ip6.arpa
  }
  cache 30
}
`

// realNodeProcesses lays out containerd, kubelet, kube-proxy and CoreDNS.
func (cp *ControlPlane) realNodeProcesses(r *realNode, newProcess func(name string, args []string) *process) []*process {
	containerd := newProcess(Containerd, []string{"--config", r.path("containerd.toml")})
	containerd.path = "/usr/bin/containerd"
	kubelet := newProcess(Kubelet, []string{
		"--config=" + r.path("kubelet.yaml"),
		"--kubeconfig=" + cp.Kubeconfig,
		"--hostname-override=" + RealNodeName,
		"--node-ip=" + RealNodeIP,
		"--root-dir=" + filepath.Join(realNodeVar, "kubelet"),
		"--node-labels=" + RealNodeLabel + "=true",
	})
	proxy := newProcess(KubeProxy, []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--hostname-override=" + RealNodeName,
		"--proxy-mode=iptables",
		"--cluster-cidr=" + realPodCIDR,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(r.proxyMetrics),
		"--healthz-bind-address=127.0.0.1:" + strconv.Itoa(r.proxyHealth),
		// Leave the machine's conntrack sysctls as they are.
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
	})
	dns := newProcess(CoreDNS, []string{"-conf", r.path("Corefile")})
	return []*process{containerd, kubelet, proxy, dns}
}

// prepareRealNode writes the real node's configuration, on new ports, and
// lays out its processes; without a real node it does nothing.
func (cp *ControlPlane) prepareRealNode(newProcess func(name string, args []string) *process) error {
	r := cp.real
	if r == nil {
		return nil
	}
	ports, err := pickPorts(4)
	if err != nil {
		return err
	}
	r.dnsHealth, r.dnsReady, r.proxyHealth, r.proxyMetrics = ports[0], ports[1], ports[2], ports[3]
	if err := r.writeConfigs(cp); err != nil {
		return err
	}
	procs := cp.realNodeProcesses(r, newProcess)
	cp.mu.Lock()
	cp.nodeProcs = procs
	cp.mu.Unlock()
	return nil
}

// startRealNode brings the real node up once the control plane runs: the
// interface, the sysctls, containerd with the preloaded images, kubelet,
// kube-proxy, CoreDNS behind the kube-dns Service, and waits for the node to
// be Ready. Without a real node it does nothing.
func (cp *ControlPlane) startRealNode(ctx context.Context) error {
	r, procs := cp.real, cp.nodeProcs
	if r == nil {
		return nil
	}
	if err := setUpHost(r); err != nil {
		return err
	}
	containerd, kubelet, proxy, dns := procs[0], procs[1], procs[2], procs[3]
	if err := containerd.start(); err != nil {
		return err
	}
	if err := waitFile(ctx, containerd, RealNodeSocket, 30*time.Second); err != nil {
		return err
	}
	if err := LoadImages(ctx, RealNodeSocket, ImageArchives()); err != nil {
		return err
	}
	if err := cp.createDNSService(ctx); err != nil {
		return err
	}
	for _, p := range []*process{kubelet, proxy, dns} {
		if err := p.start(); err != nil {
			return err
		}
	}
	if err := cp.waitNodeReady(ctx, kubelet); err != nil {
		return err
	}
	// kube-proxy is healthy once it has written the Services' rules, and
	// CoreDNS ready once it has listed them.
	if err := cp.waitHealthy(ctx, proxy, fmt.Sprintf("http://127.0.0.1:%d/healthz", r.proxyHealth), time.Minute); err != nil {
		return err
	}
	return cp.waitHealthy(ctx, dns, fmt.Sprintf("http://127.0.0.1:%d/ready", r.dnsReady), time.Minute)
}

// waitFile waits for path to exist while p runs.
func waitFile(ctx context.Context, p *process, path string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		_, err := os.Stat(path)
		return err == nil, nil
	})
}

func (cp *ControlPlane) waitNodeReady(ctx context.Context, kubelet *process) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := kubelet.exited(); err != nil {
			return false, err
		}
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for node %s to be Ready: %w", RealNodeName, err)
	}
	return nil
}

// createDNSService creates kube-system/kube-dns: the ClusterIP kubelet
// gives pods as their nameserver, with CoreDNS on the node's address as its
// one endpoint (CoreDNS runs on the host, not in a pod).
func (cp *ControlPlane) createDNSService(ctx context.Context) error {
	ports := []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec:       corev1.ServiceSpec{ClusterIP: DNSServiceIP, Ports: ports},
	}
	if _, err := cp.Client.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service kube-system/kube-dns: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-host", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   "edl-test-framework",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{RealNodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	for _, p := range ports {
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(int32(53)), Protocol: ptr.To(p.Protocol)})
	}
	if _, err := cp.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create EndpointSlice kube-system/kube-dns-host: %w", err)
	}
	return nil
}

// ImagesDirEnv names the directory of the image archives a real node loads
// at its start; empty means $EDL_CACHE_DIR/images (hack/images.sh build).
const ImagesDirEnv = "EDL_IMAGES_DIR"

// ImageArchives lists the image archives (*.tar) a real node loads.
func ImageArchives() []string {
	dir := os.Getenv(ImagesDirEnv)
	if dir == "" {
		dir = filepath.Join(CacheDir(), "images")
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	return archives
}

// LoadImages imports each archive into containerd's k8s.io namespace, where
// kubelet finds images, so that pods start without a registry.
func LoadImages(ctx context.Context, socket string, archives []string) error {
	if len(archives) == 0 {
		return errors.New("no image archives to load (the pause image among them): run hack/images.sh build")
	}
	for _, a := range archives {
		cmd := exec.CommandContext(ctx, "/usr/bin/ctr", "--address", socket, "-n", "k8s.io", "images", "import", a) // #nosec G204 -- the test node's own archives
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("import %s: %w: %s", a, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// lockRealNode checks that this machine can run a real node and takes its
// real-node lock for the control plane's life.
func (cp *ControlPlane) lockRealNode(binDir string) error {
	if missing := RealNodeMissing(binDir); missing != "" {
		return errors.New(missing)
	}
	f, err := lockRealNode()
	if err != nil {
		return err
	}
	cp.real = &realNode{dir: filepath.Join(cp.Dir, "node"), lock: f}
	return os.MkdirAll(cp.real.dir, 0o755)
}

// all is every process: the control plane's, then the real node's.
func (cp *ControlPlane) all() []*process {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append(append([]*process(nil), cp.components...), cp.nodeProcs...)
}

// stopNodeProcesses stops kubelet, kube-proxy and CoreDNS, then the pods
// (kubelet leaves them running when it stops), then containerd.
func (cp *ControlPlane) stopNodeProcesses() {
	cp.mu.Lock()
	procs := cp.nodeProcs
	cp.mu.Unlock()
	if len(procs) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, p := range procs[1:] {
		wg.Go(func() { p.stop(stopGrace) })
	}
	wg.Wait()
	killPods()
	procs[0].stop(stopGrace)
}

// stopRealNode leaves the machine as the real node found it: nothing
// mounted, no interface, no iptables rule, the sysctls restored, and the
// machine's real-node lock released.
func (cp *ControlPlane) stopRealNode() error {
	r := cp.real
	if r == nil {
		return nil
	}
	err := errors.Join(CleanRealNode(), r.restoreSysctls())
	r.lock.Close()
	return err
}
