package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The lines of edl's log that the tests and tools read, each with one group.
var (
	// EDLIdentityLine is logged when edl joins the leader election; the
	// group is the replica's identity in the Lease.
	EDLIdentityLine = regexp.MustCompile(`msg="waiting for the leader lease" lease=\S+ identity="?([^"\s]+)`)
	// EDLServingLine is logged when edl's HTTP server listens; the group is
	// its address.
	EDLServingLine = regexp.MustCompile(`msg="serving metrics and health checks" addr=(\S+)`)
)

// builds are BuildCommand's builds, one per command and process.
var (
	buildsMu sync.Mutex
	builds   = map[string]func() (string, error){}
)

// BuildCommand builds cmd/NAME of the EDL module that contains the working
// directory, as a static binary with -trimpath, once per process, into
// _output/test/NAME of the checkout (make clean removes it), and returns its
// path. Go's build cache makes every build after the first quick.
func BuildCommand(name string) (string, error) {
	buildsMu.Lock()
	build, ok := builds[name]
	if !ok {
		build = sync.OnceValues(func() (string, error) { return buildCommand(name) })
		builds[name] = build
	}
	buildsMu.Unlock()
	return build()
}

func buildCommand(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "_output", "test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Test packages run in parallel and each builds: every build writes a
	// file of its own and renames it into place, which is atomic, so that
	// no package runs a half-written binary.
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, name+"-"+hex.EncodeToString(suffix))
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("build cmd/%s: %w: %s", name, err, out)
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return path, nil
}

// BuildEDL is BuildCommand("edl").
func BuildEDL() (string, error) { return BuildCommand("edl") }

// EDLOptions say how StartEDL runs edl.
type EDLOptions struct {
	// Binary is the edl binary; empty means BuildEDL's.
	Binary string
	// Args are edl's flags.
	Args []string
	// LogPath, if set, is the file edl's standard output and error go to,
	// truncated first; otherwise the EDL keeps them in memory. Log reads
	// either.
	LogPath string
	// Detach runs edl in a session of its own that outlives this process
	// (the demo leaves it running). Otherwise edl starts as StartChild starts
	// a child: in a process group of its own, so that a terminal's ^C
	// reaches only this process, which stops edl itself, and killed when
	// this process dies.
	Detach bool
	// StartupGrace, if positive, is how long StartEDL watches edl before it
	// returns: an edl that exits within it (a bad flag, no API server, no
	// CRD) is an error that carries the end of its log.
	StartupGrace time.Duration
	// Env are variables set for edl besides this process's own, as
	// "NAME=value" (the Deployment's POD_NAMESPACE, say).
	Env []string
}

// EDL is a running edl process. Its methods are safe for concurrent use.
type EDL struct {
	cmd     *exec.Cmd
	logPath string
	buf     *SyncBuffer // edl's output when there is no logPath
	started time.Time
	done    chan struct{} // closed when edl has exited
	err     error         // how edl ended, once done is closed

	mu       sync.Mutex
	signaled bool // the caller sent a signal
}

// ErrEDLExited is what WaitForLine returns, wrapped, when edl exits before
// it logs the line.
var ErrEDLExited = errors.New("edl exited")

// StartEDL starts edl as opts say.
func StartEDL(opts EDLOptions) (*EDL, error) {
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BuildEDL(); err != nil {
			return nil, err
		}
	}
	e := &EDL{logPath: opts.LogPath, done: make(chan struct{})}
	e.cmd = exec.Command(bin, opts.Args...)
	if len(opts.Env) > 0 {
		e.cmd.Env = append(os.Environ(), opts.Env...)
	}
	var out io.Writer
	var logFile *os.File
	if e.logPath != "" {
		var err error
		if logFile, err = os.Create(e.logPath); err != nil {
			return nil, err
		}
		out = logFile
	} else {
		e.buf = &SyncBuffer{}
		out = e.buf
	}
	e.cmd.Stdout, e.cmd.Stderr = out, out
	var err error
	if opts.Detach {
		e.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = e.cmd.Start()
	} else {
		err = StartChild(e.cmd)
	}
	if err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	e.started = time.Now()
	go func() {
		e.err = e.cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(e.done)
	}()
	if opts.StartupGrace > 0 {
		if exited, err := e.Wait(opts.StartupGrace); exited {
			where := "its log"
			if e.logPath != "" {
				where = e.logPath
			}
			return nil, fmt.Errorf("edl exited at once (%v); end of %s:\n%s", err, where, e.Tail(20))
		}
	}
	return e, nil
}

// StartEDLForTest starts edl for t, failing t if it cannot, and kills it
// when t ends if it still runs.
func StartEDLForTest(t testing.TB, opts EDLOptions) *EDL {
	t.Helper()
	e, err := StartEDL(opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(e.Kill)
	return e
}

// Pid is the process id of edl.
func (e *EDL) Pid() int { return e.cmd.Process.Pid }

// Started is when edl was started.
func (e *EDL) Started() time.Time { return e.started }

// Signal sends sig to edl, unless it has already exited.
func (e *EDL) Signal(sig os.Signal) {
	e.mu.Lock()
	e.signaled = true
	e.mu.Unlock()
	if exited, _ := e.Exited(); !exited {
		_ = e.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL and waits until edl is gone.
func (e *EDL) Kill() {
	e.Signal(syscall.SIGKILL)
	<-e.done
}

// Stop sends SIGTERM and waits for edl to exit, sending SIGKILL if it has
// not after grace. It returns nil if edl exited 0, otherwise what went
// wrong; an edl that had exited before Stop returns how it ended.
func (e *EDL) Stop(grace time.Duration) error {
	exited, err := e.Exited()
	if !exited {
		e.Signal(syscall.SIGTERM)
		if exited, err = e.Wait(grace); !exited {
			e.Kill()
			return fmt.Errorf("edl did not stop within %s of SIGTERM; killed", grace)
		}
	}
	if err != nil {
		return fmt.Errorf("edl exited: %w", err)
	}
	return nil
}

// Wait waits up to timeout for edl to exit and reports whether it has and
// how it ended: nil for exit status 0.
func (e *EDL) Wait(timeout time.Duration) (exited bool, err error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-e.done:
		return true, e.err
	case <-timer.C:
		return false, nil
	}
}

// Exited reports whether edl has exited, and how: nil for exit status 0.
func (e *EDL) Exited() (bool, error) {
	select {
	case <-e.done:
		return true, e.err
	default:
		return false, nil
	}
}

// ExitedUnasked reports an edl that exited without the caller sending it a
// signal.
func (e *EDL) ExitedUnasked() bool {
	e.mu.Lock()
	signaled := e.signaled
	e.mu.Unlock()
	exited, _ := e.Exited()
	return exited && !signaled
}

// Log returns everything edl has logged so far.
func (e *EDL) Log() string {
	if e.buf != nil {
		return e.buf.String()
	}
	data, err := os.ReadFile(e.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(data)
}

// Tail returns the last n lines edl has logged.
func (e *EDL) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(e.Log(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LastLine is the last line edl has logged.
func (e *EDL) LastLine() string { return e.Tail(1) }

// WaitForLine waits up to timeout until edl's log matches re, and returns
// the match and its groups. It fails early, with ErrEDLExited, if edl
// exits without logging it, or when ctx ends.
func (e *EDL) WaitForLine(ctx context.Context, re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	var m []string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		// Whether edl had exited is read before its log, so that the log
		// read is complete when it had.
		exited, exitErr := e.Exited()
		if m = re.FindStringSubmatch(e.Log()); m != nil {
			return true, nil
		}
		if exited {
			return false, fmt.Errorf("%w (%v) before it logged %s", ErrEDLExited, exitErr, re)
		}
		return false, nil
	})
	if err != nil && !errors.Is(err, ErrEDLExited) {
		err = fmt.Errorf("edl never logged %s: %w", re, err)
	}
	return m, err
}

// Identity is edl's identity in the leader Lease, or "" until it has
// joined the election.
func (e *EDL) Identity() string {
	if m := EDLIdentityLine.FindStringSubmatch(e.Log()); m != nil {
		return m[1]
	}
	return ""
}
