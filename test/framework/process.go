package framework

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one control plane component running as a child process in its
// own process group, so that stopping it also stops anything it started.
type process struct {
	name    string
	path    string
	args    []string
	env     []string // added to the environment
	dir     string
	logPath string
	log     io.Writer // besides logPath; may be nil

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's result, once done is closed
}

// start launches the process, appending its output to logPath (and log).
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("%s is already running", p.name)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s %s %s\n", time.Now().Format(time.RFC3339), p.path, strings.Join(p.args, " "))

	cmd := exec.Command(p.path, p.args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	var out io.Writer = f
	if p.log != nil {
		out = io.MultiWriter(f, &prefixWriter{prefix: "[" + p.name + "] ", w: p.log})
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	// Output copied through a pipe must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	if err := startOnSpawnerThread(cmd); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// spawner runs functions on one goroutine locked to its OS thread for the
// life of the program. Pdeathsig fires when the *thread* that started a child
// exits, not the process; Go may end a thread whose goroutine locked it, so
// children are started from a thread that never ends.
var spawner = sync.OnceValue(func() chan<- func() {
	funcs := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked
		for f := range funcs {
			f()
		}
	}()
	return funcs
})

// StartChild starts cmd the way the control plane's processes are started:
// in a process group of its own, and (on Linux) killed with SIGKILL when the
// test binary dies, even by -timeout, which runs no t.Cleanup. Tests use it
// for the edl processes they run.
func StartChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	return startOnSpawnerThread(cmd)
}

func startOnSpawnerThread(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	spawner() <- func() { errc <- cmd.Start() }
	return <-errc
}

// exited returns a non-nil error once the process has ended, saying how.
func (p *process) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s was never started", p.name)
	}
	if !isClosed(p.done) {
		return nil
	}
	if p.err != nil {
		return fmt.Errorf("%s exited: %w", p.name, p.err)
	}
	return fmt.Errorf("%s exited", p.name)
}

// stop sends SIGTERM to the process group, and SIGKILL if it has not exited
// after grace. It is a no-op for a process that is not running.
func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	// Children that outlived the leader go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// tail returns the last n lines of the process's log file.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lastRun returns the log of the process's latest run: what follows the last
// header line start wrote.
func (p *process) lastRun() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	s := string(data)
	if i := strings.LastIndex(s, "\n=== "); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func isClosed(c chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// prefixWriter writes whole lines to w, each preceded by prefix, so that
// several processes can share one writer legibly.
type prefixWriter struct {
	prefix string
	w      io.Writer
	buf    []byte
}

var sharedWriterMu sync.Mutex

func (pw *prefixWriter) Write(b []byte) (int, error) {
	pw.buf = append(pw.buf, b...)
	for {
		i := bytes.IndexByte(pw.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		sharedWriterMu.Lock()
		_, err := fmt.Fprintf(pw.w, "%s%s\n", pw.prefix, pw.buf[:i])
		sharedWriterMu.Unlock()
		pw.buf = pw.buf[i+1:]
		if err != nil {
			return len(b), err
		}
	}
}

// logFile returns where a component's output goes inside the work dir.
func logFile(dir, name string) string {
	return filepath.Join(dir, "logs", name+".log")
}

var errStopped = errors.New("control plane is stopped")

// PIDs are the process IDs of the components running now, by name (Etcd,
// APIServer, ControllerManager, Scheduler, Kwok), for reading their /proc
// files.
func (cp *ControlPlane) PIDs() map[string]int {
	components := cp.all()
	pids := map[string]int{}
	for _, p := range components {
		p.mu.Lock()
		if p.cmd != nil && p.cmd.Process != nil && !isClosed(p.done) {
			pids[p.name] = p.cmd.Process.Pid
		}
		p.mu.Unlock()
	}
	return pids
}
