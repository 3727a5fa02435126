package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1" // the kubernetes service, first of serviceCIDR
	podCIDR     = "10.0.0.1/16"
	issuer      = "https://kubernetes.default.svc.cluster.local"

	// KeepDirEnv, when set to a non-empty value, keeps a work directory that
	// Start created (logs, certificates, etcd data) after Stop.
	KeepDirEnv = "EDL_KEEP_CONTROLPLANE"

	// stopGrace is how long a component may take to exit after SIGTERM
	// before it gets SIGKILL. kube-apiserver's graceful shutdown waits up to
	// its --request-timeout (1 min) for clients to close their watches; a
	// test control plane has nothing to gain from that.
	stopGrace = 3 * time.Second

	// startAttempts bounds how often Start lays the control plane out again
	// on new ports after a component found its port taken.
	startAttempts = 3
)

// Component names, as used for log files (Dir/logs/<name>.log) and LogTail.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

// Options configure Start. The zero value is a control plane without nodes
// in a fresh temporary directory.
type Options struct {
	// Dir is the work directory for certificates, kubeconfigs, etcd data and
	// logs. Empty means a new temporary directory that Stop removes.
	Dir string
	// Nodes are created once kwok runs; Start returns when they are Ready.
	Nodes []NodeSpec
	// APIServerFlags are added to kube-apiserver's command line, after and
	// so overriding the defaults.
	APIServerFlags []string
	// ControllerManagerFlags and SchedulerFlags are added to
	// kube-controller-manager's and kube-scheduler's command lines, after
	// and so overriding the defaults: a scale run raises their API rate
	// limits (--kube-api-qps, --kube-api-burst) with them. The scheduler
	// ignores its rate flags when SchedulerScoring gives it a --config.
	ControllerManagerFlags, SchedulerFlags []string
	// Log, if set, receives every process's output line by line, prefixed
	// with the component's name. It is written to Dir/logs/<name>.log in any case.
	Log io.Writer
	// SchedulerScoring, when set, is the scoring strategy of kube-scheduler's
	// NodeResourcesFit plugin: "MostAllocated" packs pods onto the fullest
	// node that fits them (and turns off the scores that spread pods),
	// "LeastAllocated" (what empty means) spreads them.
	SchedulerScoring string
	// KwokPodParallelism, when set, is how many pod stages kwok plays at
	// once (its podPlayStageParallelism, 4 by default): a scale run's
	// thousands of pods starting and being deleted need more.
	KwokPodParallelism uint
	// RealNode adds the real node RealNodeName beside kwok's: containerd,
	// kubelet, kube-proxy and CoreDNS on this machine, the images of
	// ImageArchives preloaded, so that pods run as processes. It needs root
	// and the tools RealNodeMissing names; one real node runs on a machine
	// at a time, and a second Start that asks for one waits for it. The API
	// server then listens on every address and advertises RealNodeIP, so
	// that pods reach it through the kubernetes Service, and admits pods
	// with their ServiceAccount's token.
	RealNode bool
}

// ControlPlane is a running control plane. Its methods are safe for
// concurrent use.
type ControlPlane struct {
	// Config is an admin (system:masters) client configuration, shared:
	// change a copy (rest.CopyConfig), not Config itself.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	// Dir is the work directory.
	Dir string
	// Client is an admin clientset.
	Client kubernetes.Interface

	binDir     string
	pki        *pki
	server     string
	apiServer  *process
	components []*process // in start order, etcd first
	healthz    map[*process]string
	etcdHealth string

	real      *realNode
	nodeProcs []*process // the real node's, containerd first

	stopOnce sync.Once
	stopErr  error

	mu        sync.Mutex
	stopped   bool
	removeDir bool // Dir is Start's temporary directory and holds nothing to keep
}

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok, creates opts.Nodes and returns once the API server is ready, the
// controller manager and scheduler are healthy and the nodes are Ready. ctx
// bounds the start only; the control plane runs until Stop. On failure every
// process started is stopped, the work directory is kept and the error
// carries the end of the logs.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	if err := checkBinaries(binDir); err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: opts.Dir, binDir: binDir}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "edl-controlplane-"); err != nil {
			return nil, err
		}
		cp.removeDir = os.Getenv(KeepDirEnv) == ""
	}
	if cp.Dir, err = filepath.Abs(cp.Dir); err != nil {
		return nil, err
	}
	track(cp)
	if opts.RealNode {
		if err := cp.lockRealNode(binDir); err != nil {
			_ = cp.Stop()
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		if err := cp.prepare(opts); err != nil {
			_ = cp.Stop()
			return nil, err
		}
		err := cp.start(ctx, opts)
		if err == nil {
			break
		}
		if taken := cp.portTaken(); taken != "" && attempt < startAttempts && ctx.Err() == nil && !cp.isStopped() {
			if opts.Log != nil {
				fmt.Fprintf(opts.Log, "%s could not bind its port (%s); starting again on other ports\n", taken, err)
			}
			cp.stopComponents()
			// etcd keeps its peer URL in its data; the next attempt's differs.
			if err := os.RemoveAll(filepath.Join(cp.Dir, "etcd")); err != nil {
				_ = cp.Stop()
				return nil, err
			}
			continue
		}
		// Keep the logs that explain the failure.
		cp.mu.Lock()
		cp.removeDir = false
		cp.mu.Unlock()
		_ = cp.Stop()
		return nil, fmt.Errorf("start control plane in %s: %w\n%s", cp.Dir, err, cp.LogTails(20))
	}
	return cp, nil
}

// prepare writes credentials, kubeconfigs and kwok's stages into the work
// directory and lays out the processes on new ports.
func (cp *ControlPlane) prepare(opts Options) error {
	for _, sub := range []string{"logs", "etcd", "kwok/stages", "kwok/home"} {
		if err := os.MkdirAll(filepath.Join(cp.Dir, sub), 0o755); err != nil {
			return err
		}
	}
	var err error
	// A second layout keeps the first one's credentials: client-go caches
	// TLS transports by the certificate files' paths.
	if cp.pki == nil {
		if cp.pki, err = newPKI(filepath.Join(cp.Dir, "pki")); err != nil {
			return err
		}
	}
	ports, err := pickPorts(5)
	if err != nil {
		return err
	}
	l := layout{
		dir:             cp.Dir,
		pki:             cp.pki,
		etcdURL:         fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		peerURL:         fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		apiPort:         ports[2],
		kcmPort:         ports[3],
		schedPort:       ports[4],
		kubeconfig:      filepath.Join(cp.Dir, "kubeconfig"),
		kcmKubeconfig:   filepath.Join(cp.Dir, "controller-manager.kubeconfig"),
		schedKubeconfig: filepath.Join(cp.Dir, "scheduler.kubeconfig"),
		realNode:        opts.RealNode,
	}
	cp.server = l.server()
	cp.Kubeconfig = l.kubeconfig
	for path, user := range map[string]string{l.kubeconfig: userAdmin, l.kcmKubeconfig: userControllerManager, l.schedKubeconfig: userScheduler} {
		if err := cp.pki.writeKubeconfig(path, cp.server, user); err != nil {
			return err
		}
	}
	cp.Config = &rest.Config{
		Host: cp.server,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   cp.pki.caCert,
			CertFile: cp.pki.clients[userAdmin].cert,
			KeyFile:  cp.pki.clients[userAdmin].key,
		},
		QPS:   100,
		Burst: 200,
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	if l.kwokConfigs, err = writeStages(filepath.Join(cp.Dir, "kwok", "stages")); err != nil {
		return err
	}
	if opts.KwokPodParallelism > 0 {
		conf, err := writeKwokConfiguration(filepath.Join(cp.Dir, "kwok"), opts.KwokPodParallelism)
		if err != nil {
			return err
		}
		l.kwokConfigs = append(l.kwokConfigs, conf)
	}
	if opts.SchedulerScoring != "" {
		l.schedConfig = filepath.Join(cp.Dir, "scheduler-config.yaml")
		if err := os.WriteFile(l.schedConfig, schedulerConfig(l.schedKubeconfig, opts.SchedulerScoring), 0o644); err != nil {
			return err
		}
	}

	newProcess := func(name string, args []string) *process {
		return &process{
			name:    name,
			path:    filepath.Join(cp.binDir, name),
			args:    args,
			dir:     cp.Dir,
			logPath: logFile(cp.Dir, name),
			log:     opts.Log,
		}
	}
	etcd := newProcess(Etcd, l.etcdArgs())
	cp.apiServer = newProcess(APIServer, l.apiServerArgs(opts.APIServerFlags))
	kcm := newProcess(ControllerManager, l.controllerManagerArgs(opts.ControllerManagerFlags))
	scheduler := newProcess(Scheduler, l.schedulerArgs(opts.SchedulerFlags))
	kw := newProcess(Kwok, l.kwokArgs())
	// kwok also reads ~/.kwok/kwok.yaml; a HOME of its own keeps a
	// developer's kwok settings out of the tests.
	kw.env = []string{"HOME=" + filepath.Join(cp.Dir, "kwok", "home")}

	cp.mu.Lock()
	cp.components = []*process{etcd, cp.apiServer, kcm, scheduler, kw}
	cp.mu.Unlock()
	if err := cp.prepareRealNode(newProcess); err != nil {
		return err
	}
	cp.healthz = map[*process]string{
		kcm:       fmt.Sprintf("https://127.0.0.1:%d/healthz", l.kcmPort),
		scheduler: fmt.Sprintf("https://127.0.0.1:%d/healthz", l.schedPort),
	}
	cp.etcdHealth = l.etcdURL + "/health"
	return nil
}

// start runs the processes in dependency order, waiting for each layer.
func (cp *ControlPlane) start(ctx context.Context, opts Options) error {
	etcd, kcm, scheduler, kw := cp.components[0], cp.components[2], cp.components[3], cp.components[4]
	if err := etcd.start(); err != nil {
		return err
	}
	if err := cp.waitHealthy(ctx, etcd, cp.etcdHealth, 30*time.Second); err != nil {
		return err
	}
	if err := cp.apiServer.start(); err != nil {
		return err
	}
	if err := cp.waitAPIServer(ctx); err != nil {
		return err
	}
	for _, p := range []*process{kcm, scheduler, kw} {
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range []*process{kcm, scheduler} {
		if err := cp.waitHealthy(ctx, p, cp.healthz[p], 60*time.Second); err != nil {
			return err
		}
	}
	if err := kw.exited(); err != nil {
		return err
	}
	if err := cp.startRealNode(ctx); err != nil {
		return err
	}
	return cp.AddNodes(ctx, opts.Nodes...)
}

// waitHealthy polls url until it answers 200, failing early if p exits.
func (cp *ControlPlane) waitHealthy(ctx context.Context, p *process, url string, timeout time.Duration) error {
	client := cp.httpClient()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be healthy at %s: %w", p.name, url, err)
	}
	return nil
}

// waitAPIServer polls /readyz until the API server is ready to serve.
func (cp *ControlPlane) waitAPIServer(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := cp.apiServer.exited(); err != nil {
			return false, err
		}
		_, last = cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		if last != nil && !errors.Is(err, last) {
			err = fmt.Errorf("%w (last answer: %v)", err, last)
		}
		return fmt.Errorf("wait for kube-apiserver to be ready: %w", err)
	}
	return nil
}

// httpClient trusts the control plane's CA and presents the admin certificate.
func (cp *ControlPlane) httpClient() *http.Client {
	pool := x509.NewCertPool()
	if ca, err := os.ReadFile(cp.pki.caCert); err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	admin := cp.pki.clients[userAdmin]
	if cert, err := tls.LoadX509KeyPair(admin.cert, admin.key); err == nil {
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true},
	}
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after 3 s),
// leaving etcd and the other components running, and failing to reach it,
// until StartAPIServer.
func (cp *ControlPlane) StopAPIServer() error {
	if cp.isStopped() {
		return errStopped
	}
	cp.apiServer.stop(stopGrace)
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same
// port with the same certificates and etcd data, and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if cp.isStopped() {
		return errStopped
	}
	if err := cp.apiServer.start(); err != nil {
		return err
	}
	if err := cp.waitAPIServer(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, cp.LogTail(APIServer, 20))
	}
	return nil
}

// Stop stops every process and removes the work directory if Start created
// it (unless $EDL_KEEP_CONTROLPLANE is set). It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	// A second caller (a signal handler, a deferred Stop) waits for the first.
	cp.stopOnce.Do(func() { cp.stopErr = cp.stop() })
	return cp.stopErr
}

func (cp *ControlPlane) stop() error {
	cp.mu.Lock()
	cp.stopped = true
	cp.mu.Unlock()
	untrack(cp)

	cp.stopComponents()
	err := cp.stopRealNode()

	cp.mu.Lock()
	remove := cp.removeDir
	cp.mu.Unlock()
	if remove {
		err = errors.Join(err, os.RemoveAll(cp.Dir))
	}
	return err
}

// stopComponents stops every process: the API server's clients first, so that
// it has no watches to drain, then the API server, so that etcd has none
// either. Before prepare has laid out the processes there is nothing to stop.
func (cp *ControlPlane) stopComponents() {
	cp.mu.Lock()
	components := cp.components
	cp.mu.Unlock()
	cp.stopNodeProcesses()
	if len(components) == 0 {
		return
	}
	etcd, apiServer, clients := components[0], components[1], components[2:]
	var wg sync.WaitGroup
	for _, p := range clients {
		wg.Go(func() { p.stop(stopGrace) })
	}
	wg.Wait()
	apiServer.stop(stopGrace)
	etcd.stop(stopGrace)
}

// portTaken names the first component whose last run failed because its
// port was in use, or returns "".
func (cp *ControlPlane) portTaken() string {
	cp.mu.Lock()
	components := cp.components
	cp.mu.Unlock()
	for _, p := range components {
		if strings.Contains(p.lastRun(), "address already in use") {
			return p.name
		}
	}
	return ""
}

func (cp *ControlPlane) isStopped() bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.stopped
}
