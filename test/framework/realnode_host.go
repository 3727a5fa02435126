package framework

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// realNodeLock is held by the one real node of the machine; a second
// control plane that asks for one waits for it.
const realNodeLock = "/run/edl-node.lock"

// lockRealNode takes the machine's real-node lock, waiting for another
// holder to let go.
func lockRealNode() (*os.File, error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", realNodeLock, err)
	}
	return f, nil
}

// ErrRealNodeInUse is CleanIdleRealNode's answer while a real node runs.
var ErrRealNodeInUse = errors.New("a real node runs on this machine (" + realNodeLock + " is held); left alone")

// CleanIdleRealNode is CleanRealNode when no real node runs: it takes the
// machine's real-node lock without waiting, and returns ErrRealNodeInUse
// when another process holds it, so that cleaning up after one cluster
// never pulls the node from under another's.
func CleanIdleRealNode() error {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return ErrRealNodeInUse
	}
	return CleanRealNode()
}

// nodeSysctls are the kernel settings a node needs: forwarding for the
// pods' traffic, and bridged traffic through iptables so that a pod reaches
// a Service whose endpoint shares its bridge. stop restores them.
var nodeSysctls = map[string]string{
	"net/ipv4/ip_forward":                 "1",
	"net/bridge/bridge-nf-call-iptables":  "1",
	"net/bridge/bridge-nf-call-ip6tables": "1",
}

// setUpHost cleans what an earlier run left, then adds the node's address
// and sets the sysctls, recording their values.
func setUpHost(r *realNode) error {
	if err := CleanRealNode(); err != nil {
		return err
	}
	for _, d := range []string{realNodeVar, realNodeRun} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		// A bridge with no port: this kernel has no dummy interfaces.
		{"link", "add", nodeLink, "type", "bridge"},
		{"addr", "add", RealNodeIP + "/32", "dev", nodeLink},
		{"link", "set", nodeLink, "up"},
	} {
		if err := run("/usr/sbin/ip", args...); err != nil {
			return err
		}
	}
	r.sysctls = map[string]string{}
	for k, v := range nodeSysctls {
		path := filepath.Join("/proc/sys", k)
		old, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		r.sysctls[k] = strings.TrimSpace(string(old))
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil { // #nosec G306 -- a sysctl
			return fmt.Errorf("set %s: %w", path, err)
		}
	}
	return nil
}

// restoreSysctls puts back the values setUpHost found.
func (r *realNode) restoreSysctls() error {
	var errs []error
	for k, v := range r.sysctls {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil { // #nosec G306 -- a sysctl
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CleanRealNode removes what a real node leaves on the machine once its
// processes are gone: the pods' processes and the containerd shims, the
// mounts below its directories, the network namespaces, the interfaces, the
// iptables rules of kubelet, kube-proxy and the bridge plugin, and the pod
// cgroups. It is idempotent; hack/cluster.sh down runs it too, in case a
// node's processes were killed before they could clean up.
func CleanRealNode() error {
	var errs []error
	killPods()
	errs = append(errs, unmountNode())
	for _, l := range []string{bridgeLink, nodeLink} {
		if linkExists(l) {
			errs = append(errs, run("/usr/sbin/ip", "link", "del", l))
		}
	}
	errs = append(errs, cleanIPTables(), removeCgroups("kubepods"))
	matches, _ := filepath.Glob("/run/netns/cni-*")
	for _, m := range matches {
		errs = append(errs, os.Remove(m))
	}
	errs = append(errs, os.RemoveAll(realNodeRun), os.RemoveAll(filepath.Join(realNodeVar, "kubelet")))
	return errors.Join(errs...)
}

// killPods kills every process in the node's pod cgroups and every shim
// its containerd started: shims outlive containerd by design.
func killPods() {
	for range 3 {
		pids := cgroupPIDs("kubepods")
		pids = append(pids, shimPIDs()...)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cgroupRoots are the cgroup v1 hierarchies (and the v2 one) on this machine.
func cgroupRoots() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var roots []string
	for _, e := range entries {
		roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
	}
	return roots
}

// cgroupPIDs lists the processes in the named top-level cgroup, in any hierarchy.
func cgroupPIDs(name string) []int {
	var pids []int
	for _, root := range cgroupRoots() {
		_ = filepath.WalkDir(filepath.Join(root, name), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path) // #nosec G122 -- cgroupfs, which only the kernel writes
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the named top-level cgroup and those below it,
// deepest first, in every hierarchy.
func removeCgroups(name string) error {
	var errs []error
	for _, root := range cgroupRoots() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(root, name), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// shimPIDs lists the containerd shims serving the real node's containerd.
func shimPIDs() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], "containerd-shim-runc-v2") && slices.Contains(args, RealNodeSocket) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// RealNodeMounts lists the mount points below the real node's directories
// and its network namespaces: after a clean stop, none.
func RealNodeMounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		p := fields[4]
		if strings.HasPrefix(p, realNodeVar+"/") || strings.HasPrefix(p, realNodeRun+"/") || p == realNodeRun || strings.HasPrefix(p, "/run/netns/cni-") {
			points = append(points, p)
		}
	}
	return points
}

// unmountNode unmounts the node's mounts, deepest first; a mount point
// may be mounted more than once, so it loops while any is left.
func unmountNode() error {
	for range 5 {
		points := RealNodeMounts()
		if len(points) == 0 {
			return nil
		}
		sort.Sort(sort.Reverse(sort.StringSlice(points)))
		for _, p := range points {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
	if left := RealNodeMounts(); len(left) > 0 {
		return fmt.Errorf("still mounted: %s", strings.Join(left, ", "))
	}
	return nil
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// RealNodeLinks lists the real node's interfaces that exist: after a clean
// stop, none.
func RealNodeLinks() []string {
	var links []string
	for _, l := range []string{bridgeLink, nodeLink} {
		if linkExists(l) {
			links = append(links, l)
		}
	}
	return links
}

// nodeChain tells the iptables chains of kubelet, kube-proxy and the CNI
// plugins from everyone else's.
func nodeChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")
}

// RealNodeRules lists the iptables and ip6tables rules and chains of
// kubelet, kube-proxy and the CNI plugins (iptables -S form, prefixed with
// the command and table): after a clean stop, none.
func RealNodeRules() []string {
	var rules []string
	for _, cmd := range []string{"/usr/sbin/iptables", "/usr/sbin/ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(cmd, "-w", "-t", table, "-S").Output() // #nosec G204 -- fixed commands
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-") {
					rules = append(rules, filepath.Base(cmd)+" -t "+table+" "+line)
				}
			}
		}
	}
	return rules
}

// cleanIPTables deletes the rules that jump to or sit in a node chain, then
// the chains.
func cleanIPTables() error {
	var errs []error
	for _, cmd := range []string{"/usr/sbin/iptables", "/usr/sbin/ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(cmd, "-w", "-t", table, "-S").Output() // #nosec G204 -- fixed commands
			if err != nil {
				continue
			}
			var chains []string
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) >= 2 && f[0] == "-N" && nodeChain(f[1]):
					chains = append(chains, f[1])
				case len(f) >= 2 && f[0] == "-A" && !nodeChain(f[1]) && (strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-")):
					// A rule in a built-in chain that jumps to a node chain.
					if err := run(cmd, append([]string{"-w", "-t", table, "-D"}, unquote(f[1:])...)...); err != nil {
						errs = append(errs, err)
					}
				}
			}
			for _, verb := range []string{"-F", "-X"} {
				for _, c := range chains {
					if err := run(cmd, "-w", "-t", table, verb, c); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// unquote strips the quotes iptables -S puts around a comment, which
// exec passes as one argument anyway.
func unquote(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, `"`) {
			j := i
			for !strings.HasSuffix(args[j], `"`) && j+1 < len(args) {
				j++
			}
			out = append(out, strings.Trim(strings.Join(args[i:j+1], " "), `"`))
			i = j
			continue
		}
		out = append(out, a)
	}
	return out
}

// run runs a command and returns an error with its output if it fails.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput() // #nosec G204 -- the framework's own fixed commands
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RealNodeProcesses lists the PIDs of the real node's processes that run:
// containerd, its shims, kubelet, kube-proxy and CoreDNS (their command
// lines name the node's socket, directories or name), and every process in
// the pod cgroups. After a clean stop, none.
func RealNodeProcesses() []int {
	pids := append(cgroupPIDs("kubepods"), shimPIDs()...)
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		c := string(cmdline)
		if (strings.Contains(c, realNodeVar) || strings.Contains(c, RealNodeSocket) || strings.Contains(c, "--hostname-override="+RealNodeName) ||
			strings.Contains(c, "/node/containerd.toml") || strings.Contains(c, "/node/Corefile")) && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
