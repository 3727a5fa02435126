package framework

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paddlepaddle/edl/test/kwok"
)

// layout is where one start attempt puts the control plane: its ports, and
// the files each component reads. Its methods build each component's
// command line.
type layout struct {
	dir                string
	pki                *pki
	etcdURL, peerURL   string
	apiPort            int
	kcmPort, schedPort int
	kubeconfig         string // admin's, which kwok uses too
	kcmKubeconfig      string
	schedKubeconfig    string
	schedConfig        string // a KubeSchedulerConfiguration, or "" for the defaults
	kwokConfigs        []string
	realNode           bool // the API server serves a real node's pods (Options.RealNode)
}

// server is the API server's URL.
func (l layout) server() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(l.apiPort))
}

func (l layout) etcdArgs() []string {
	return []string{
		"--name=edl",
		"--data-dir=" + filepath.Join(l.dir, "etcd"),
		"--listen-client-urls=" + l.etcdURL,
		"--advertise-client-urls=" + l.etcdURL,
		"--listen-peer-urls=" + l.peerURL,
		"--initial-advertise-peer-urls=" + l.peerURL,
		"--initial-cluster=edl=" + l.peerURL,
		// A test cluster's data is disposable; fsync would only slow it down.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

// apiServerArgs are kube-apiserver's flags, extra last so that they
// override the defaults.
func (l layout) apiServerArgs(extra []string) []string {
	p := l.pki
	args := []string{
		"--etcd-servers=" + l.etcdURL,
		"--secure-port=" + strconv.Itoa(l.apiPort),
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCert,
		"--service-account-key-file=" + p.saPub,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-account-issuer=" + issuer,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file=" + p.caCert,
		"--requestheader-allowed-names=" + frontProxyName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.clients[userFrontProxy].cert,
		"--proxy-client-key-file=" + p.clients[userFrontProxy].key,
		"--allow-privileged=true",
		"--profiling=false",
	}
	if l.realNode {
		// Pods reach the API server through the kubernetes Service, whose
		// endpoint is the advertised address, with their ServiceAccount's
		// token; logs and exec reach the kubelet at its InternalIP (the
		// node's name resolves nowhere here).
		args = append(args,
			"--bind-address=0.0.0.0",
			"--advertise-address="+RealNodeIP,
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-client-certificate="+p.clients[userAdmin].cert,
			"--kubelet-client-key="+p.clients[userAdmin].key,
		)
	} else {
		args = append(args,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			// Pods need no service account tokens on kwok nodes, and without this
			// plugin a pod created right after its namespace cannot fail for
			// want of the namespace's default service account.
			"--disable-admission-plugins=ServiceAccount",
			// Endpoints may not hold a loopback address; nothing dials the
			// kubernetes service here anyway.
			"--endpoint-reconciler-type=none",
		)
	}
	return append(args, extra...)
}

func (l layout) controllerManagerArgs(extra []string) []string {
	p := l.pki
	return append([]string{
		"--kubeconfig=" + l.kcmKubeconfig,
		"--authentication-kubeconfig=" + l.kcmKubeconfig,
		"--authorization-kubeconfig=" + l.kcmKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.kcmPort),
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--leader-elect=false",
		// The cloud controllers do nothing without a cloud provider; naming
		// them keeps the log free of their warnings.
		"--controllers=*,-service-lb-controller,-cloud-node-lifecycle-controller,-node-route-controller",
		"--service-account-private-key-file=" + p.saKey,
		"--root-ca-file=" + p.caCert,
		// One service account per controller, as kubeadm runs it: the
		// bootstrap RBAC role of system:kube-controller-manager alone may
		// not, for one, lift node taints.
		"--use-service-account-credentials=true",
		// The node-lifecycle controller lifts the not-ready taint of a node
		// that became Ready on its next pass; 5 s (the default) between
		// passes would make every new node wait that long.
		"--node-monitor-period=1s",
		"--cluster-signing-cert-file=" + p.caCert,
		"--cluster-signing-key-file=" + p.caKey,
		"--profiling=false",
	}, extra...)
}

func (l layout) schedulerArgs(extra []string) []string {
	var args []string
	if l.schedConfig != "" {
		// With --config, kube-scheduler ignores --kubeconfig: the file names it.
		args = append(args, "--config="+l.schedConfig)
	}
	return append(append(args,
		"--kubeconfig="+l.schedKubeconfig,
		"--authentication-kubeconfig="+l.schedKubeconfig,
		"--authorization-kubeconfig="+l.schedKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(l.schedPort),
		"--tls-cert-file="+l.pki.servingCert,
		"--tls-private-key-file="+l.pki.servingKey,
		"--leader-elect=false",
		"--profiling=false",
	), extra...)
}

func (l layout) kwokArgs() []string {
	args := []string{
		"--kubeconfig=" + l.kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwok.NodeAnnotation + "=" + kwok.NodeAnnotationValue,
		// kwok renews each node's Lease, as a kubelet does; the heartbeat stage
		// then only refreshes node conditions now and then.
		"--node-lease-duration-seconds=40",
		"--cidr=" + podCIDR,
	}
	for _, s := range l.kwokConfigs {
		args = append(args, "--config="+s)
	}
	return args
}

// schedulerConfig is a KubeSchedulerConfiguration whose one profile scores
// nodes for CPU and memory with the given NodeResourcesFit strategy. For
// MostAllocated it also turns off the two scores that spread pods whatever
// the strategy says: NodeResourcesBalancedAllocation and PodTopologySpread
// (whose default constraints spread a ReplicaSet's pods over nodes).
func schedulerConfig(kubeconfig, scoring string) []byte {
	plugins := ""
	if scoring == "MostAllocated" {
		plugins = `  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: PodTopologySpread
`
	}
	return fmt.Appendf(nil, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
%s  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: %s
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
`, kubeconfig, plugins, scoring)
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free when
// tried. Nothing reserves them until the components bind them, so they are
// drawn at random from below the kernel's ephemeral range: a port in that
// range is what every outgoing connection on the machine (a parallel test
// package's, say) takes as its local port, and one did take a port this
// function had just found free. Start tries again if a port is taken anyway.
func freePorts(n int) ([]int, error) {
	lo, hi := portRange()
	ports := make([]int, 0, n)
	seen := map[int]bool{}
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("find %d free ports in [%d, %d): only %d found", n, lo, hi, len(ports))
		}
		port := lo + rand.IntN(hi-lo) // #nosec G404 -- a port number, not a secret
		if seen[port] {
			continue
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		ports = append(ports, port)
	}
	return ports, nil
}

// pickPorts is freePorts; a test replaces it to hand out a taken port.
var pickPorts = freePorts

// portRange is where freePorts draws from: the 16,384 ports below the
// ephemeral range (Linux's ip_local_port_range, 32768 by default).
func portRange() (lo, hi int) {
	hi = 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				hi = v
			}
		}
	}
	lo = max(1024, hi-16384)
	return lo, hi
}

// writeStages copies kwok's embedded stages into dir and returns their paths.
func writeStages(dir string) ([]string, error) {
	var paths []string
	err := fs.WalkDir(kwok.Stages, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := kwok.Stages.ReadFile(path)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return err
		}
		paths = append(paths, out)
		return nil
	})
	return paths, err
}

// kwokConfiguration is a KwokConfiguration that sets podPlayStageParallelism.
// kwok does not default the options of a configuration it reads from a file,
// so the rest are its defaults (v0.8.0, zz_generated.defaults.go); the
// command line overrides those it sets.
const kwokConfiguration = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.0.0.0/24
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  nodeLeaseDurationSeconds: 40
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`

// writeKwokConfiguration writes kwokConfiguration with podPlayStageParallelism
// into dir and returns its path.
func writeKwokConfiguration(dir string, podParallelism uint) (string, error) {
	path := filepath.Join(dir, "configuration.yaml")
	err := os.WriteFile(path, []byte(fmt.Sprintf(kwokConfiguration, podParallelism)), 0o644) // #nosec G306 -- a test cluster's configuration
	return path, err
}
