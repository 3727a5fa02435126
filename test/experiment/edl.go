package experiment

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// EDLArgs are the flags an experiment runs edl with: the kubeconfig, the
// autoscale interval, and -dry_run when EDL is off. A single replica needs no
// leader election, and its HTTP server takes any free port, so that runs on
// one machine never collide on :8080. Everything else keeps edl's defaults
// (max_load_desired 0.97, cooldown 3 cycles).
func EDLArgs(kubeconfig string, interval time.Duration, mode Mode) []string {
	args := []string{"-kubeconfig", kubeconfig, "-autoscale_interval", interval.String(), "-log_level", "info",
		"-leader_elect=false", "-http_addr", "127.0.0.1:0"}
	if mode == Off {
		args = append(args, "-dry_run")
	}
	return args
}

// EDLProcess is a running edl binary.
type EDLProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

// StartEDL runs the edl binary with args, its output appended to logPath.
// It fails if edl exits within the first two seconds (a bad flag, no API
// server, no CRD), with the end of the log.
func StartEDL(binary, logPath string, args ...string) (*EDLProcess, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a terminal's Ctrl-C reaches the experiment,
	// which stops edl itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	p := &EDLProcess{cmd: cmd, done: make(chan struct{}), log: logFile}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case <-p.done:
		logFile.Close()
		return nil, fmt.Errorf("edl exited at once (%v); end of %s:\n%s", p.err, logPath, tailFile(logPath, 20))
	case <-time.After(2 * time.Second):
	}
	return p, nil
}

// Exited reports whether edl has exited, and how.
func (p *EDLProcess) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, and SIGKILL if edl has not exited 10 s later.
func (p *EDLProcess) Stop() error {
	defer p.log.Close()
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("edl did not stop within 10 s of SIGTERM; killed")
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && exit.ExitCode() != 0 {
		return fmt.Errorf("edl exited with code %d", exit.ExitCode())
	}
	return nil
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
