// Command localcluster runs a standing EDL demo cluster: the test framework's
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with kwok nodes, until SIGTERM or SIGINT. hack/cluster.sh
// starts and stops it in the background; run it directly to keep it in the
// foreground.
//
// Once the cluster is up it writes DIR/kubeconfig (certificates embedded) and
// DIR/localcluster.pid, and prints the kubeconfig path. Both files are
// removed on exit. The control plane's own files live in DIR/state, which is
// wiped at every start: each run is a fresh cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/paddlepaddle/edl/test/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		dir     = flag.String("dir", defaultDir(), "directory for the kubeconfig, pid file and cluster state")
		nodes   = flag.Int("nodes", 3, "number of kwok nodes, named node-0 ... node-(N-1)")
		cpu     = flag.String("node-cpu", "18", "CPU of each node")
		memory  = flag.String("node-memory", "100Gi", "memory of each node")
		gpu     = flag.Int64("node-gpu", 0, "nvidia.com/gpu of each node")
		pods    = flag.Int("node-pods", framework.DefaultNodePods, "most pods per node")
		timeout = flag.Duration("start-timeout", 3*time.Minute, "how long the start may take (a real node's first start, which loads the images, gets 10 minutes more)")
		real    = flag.Int("real-nodes", 0, "real nodes beside the kwok nodes: 0 or 1 (real-0: kubelet, containerd, kube-proxy and CoreDNS on this machine; needs root)")
		clean   = flag.Bool("clean-real-node", false, "remove what a real node left on this machine (processes, mounts, interfaces, iptables rules) and exit; a real node that runs, its lock held, is left alone")
	)
	flag.Parse()
	if *clean {
		if err := framework.CleanIdleRealNode(); errors.Is(err, framework.ErrRealNodeInUse) {
			fmt.Println(err)
			return nil
		} else if err != nil {
			return err
		}
		return nil
	}
	if *nodes < 0 {
		return fmt.Errorf("-nodes must not be negative")
	}
	if *real < 0 || *real > 1 {
		return fmt.Errorf("-real-nodes must be 0 or 1 (one real node per machine), not %d", *real)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	state := filepath.Join(absDir, "state")
	kubeconfig := filepath.Join(absDir, "kubeconfig")
	pidFile := filepath.Join(absDir, "localcluster.pid")
	// The kubeconfig appears only when the cluster is ready; one left from a
	// run that was killed must not say otherwise.
	for _, stale := range []string{state, kubeconfig, pidFile} {
		if err := os.RemoveAll(stale); err != nil {
			return err
		}
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidFile)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	spec := framework.NodeSpec{Name: "node", CPU: *cpu, Memory: *memory, GPU: *gpu, Pods: *pods, Count: *nodes}
	if *real > 0 {
		// Beside a real node, the kwok nodes carry kwok's own taint, so that
		// what must really run (edl's Deployment, CoreDNS's clients) lands on
		// the real node; a job that may run on phantoms tolerates it.
		spec.Taints = []corev1.Taint{framework.KwokTaint}
		*timeout += 10 * time.Minute
	}
	var specs []framework.NodeSpec
	if *nodes > 0 {
		specs = append(specs, spec)
	}
	startCtx, cancel := context.WithTimeout(ctx, *timeout)
	began := time.Now()
	cp, err := framework.Start(startCtx, framework.Options{Dir: state, Nodes: specs, RealNode: *real > 0})
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping the cluster")
		_ = os.Remove(kubeconfig)
		if err := cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "localcluster: stop: %v\n", err)
		}
	}()

	if *real > 0 {
		// example/torchjob.yaml's claim, in namespace default: the
		// real node's disk, shared by its trainers.
		dir, err := cp.SharedVolume(ctx, "default", "torch-checkpoints")
		if err != nil {
			return err
		}
		fmt.Printf("volume for claim default/torch-checkpoints: %s\n", dir)
	}
	if err := writeKubeconfig(cp.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	fmt.Printf("cluster up in %s with %d nodes (%s CPU, %s memory, %d GPU each)\n",
		time.Since(began).Round(100*time.Millisecond), *nodes, *cpu, *memory, *gpu)
	if *real > 0 {
		fmt.Printf("real node %s at %s (kwok nodes tainted %s)\n", framework.RealNodeName, framework.RealNodeIP, framework.KwokTaint.ToString())
	}
	fmt.Printf("kubeconfig: %s\n", kubeconfig)
	fmt.Printf("kubectl --kubeconfig %s get nodes\n", kubeconfig)
	fmt.Printf("binaries: %s\n", cp.BinDir())
	fmt.Printf("logs: %s\n", filepath.Join(state, "logs"))

	<-ctx.Done()
	return nil
}

// writeKubeconfig copies the admin kubeconfig with its certificates embedded,
// so the copy works from anywhere, and writes it atomically: whoever sees the
// file sees all of it.
func writeKubeconfig(from, to string) error {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return err
	}
	tmp := to + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, to)
}

func defaultDir() string { return filepath.Join(framework.CacheDir(), "cluster") }
