//go:build linux

package pytorch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The wrapper's tests run Wrapper with the machine's python3 against a
// stand-in for torchrun's agent (testdata/standin/torch/distributed/run.py),
// which does what EDL_STANDIN says and leaves traces of what happened to it.

// runTimeout bounds each test: no wait of theirs outlives it.
const runTimeout = 30 * time.Second

// trainArgs are torchrun's arguments in every run.
var trainArgs = []string{"--nnodes", "1:3", "train.py", "--epochs", "3"}

func TestMain(m *testing.M) {
	// The tests' process adopts whatever a wrapper leaves behind: a worker it
	// did not wait for, or a zombie it did not reap, then stays under /proc
	// instead of going to init, where assertGone sees it.
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.Syscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "cannot become a child subreaper:", errno)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func TestWrapperExitsAsItsAgent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		standIn string
		want    int
	}{
		{"exit 0", "exit 0", 0},
		{"exit 1", "exit 1", 1},
		{"exit 7", "exit 7", 7},
		{"killed by SIGKILL", "signal 9", 137},
		{"killed by SIGTERM", "signal 15", 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			state := t.TempDir()
			r := start(ctx, t, tc.standIn, withStateDir(state))

			assert.Equal(t, tc.want, r.wait(ctx, t))
			assert.Equal(t, [][]string{trainArgs}, r.startedArgs(t), "the agent runs once, with torchrun's arguments")
			assert.Empty(t, r.output(t), "the wrapper says nothing: it became a subreaper and the agent ended by itself")
			finished, err := os.ReadFile(filepath.Join(state, "finished"))
			if tc.want != 0 {
				assert.ErrorIs(t, err, fs.ErrNotExist, "only an exit 0 ends the training")
				return
			}
			require.NoError(t, err, "an exit 0 is recorded")
			_, err = time.Parse(time.RFC3339, strings.TrimSpace(string(finished)))
			assert.NoError(t, err, "finished holds the time the training ended")
			assert.Equal(t, []string{"finished"}, entries(t, state), "nothing else is left in the state dir")
		})
	}
}

func TestWrapperOnSIGTERMKillsTheAgentAndStopsItsWorkers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sig     syscall.Signal
		sigName string
		launch  string
	}{
		{"SIGTERM", syscall.SIGTERM, "SIGTERM", ""},
		{"SIGINT", syscall.SIGINT, "SIGINT", ""},
		// Any open or listing of a /children file fails: the wrapper finds
		// the workers without /proc/<pid>/task/<pid>/children, as on a
		// kernel without CONFIG_PROC_CHILDREN.
		{"SIGTERM, no children file", syscall.SIGTERM, "SIGTERM", "no-children-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			var opts []option
			if tc.launch != "" {
				opts = append(opts, launchedBy(tc.launch))
			}
			r := start(ctx, t, "workers 2", opts...)
			r.waitFor(ctx, t, "the agent's workers", func() bool { return r.has("agent-ready") })
			agent := r.agentPid(t)
			workers := []int{r.pid(t, "worker-0.pid"), r.pid(t, "worker-1.pid")}

			require.NoError(t, r.cmd.Process.Signal(tc.sig))

			assert.Equal(t, 0, r.wait(ctx, t))
			// The agent died by SIGKILL: it caught no signal (SIGTERM would
			// have closed the rendezvous), did not outlive its workers, and
			// is gone.
			assert.False(t, r.has("agent-signals"), "the agent caught %q", r.read(t, "agent-signals"))
			assert.False(t, r.has("agent-exit"), "the agent saw its workers end: it was not killed first")
			for i := range workers {
				assert.Equal(t, "term ppid="+strconv.Itoa(r.cmd.Process.Pid), r.read(t, fmt.Sprintf("worker-%d.term", i)),
					"worker %d stopped on SIGTERM as the wrapper's child (the agent gone, the wrapper its subreaper), and was waited for", i)
			}
			slices.Sort(workers)
			assert.Equal(t, fmt.Sprintf("edl: %s: the agent is killed, its workers %s told to stop\n", tc.sigName, pyList(workers)),
				r.output(t), "one line says what the wrapper did, and it tried no /children file")
			assertGone(t, append([]int{agent}, workers...)...)
		})
	}
	assert.NotContains(t, Wrapper, "/children", "the wrapper does not use /proc/<pid>/task/<pid>/children")
}

// TestWrapperStopsTheWorkersOfAnAgentThatEnded covers the fallback: the
// agent ended by itself just as SIGTERM came, so its workers are the
// wrapper's children already. The test holds the wrapper (SIGSTOP), kills the
// agent, sends SIGTERM and lets the wrapper go on (SIGCONT): it finds both
// the agent's end and SIGTERM pending, and the kernel gives it SIGTERM first.
func TestWrapperStopsTheWorkersOfAnAgentThatEnded(t *testing.T) {
	ctx := testContext(t)
	r := start(ctx, t, "workers 2")
	r.waitFor(ctx, t, "the agent's workers", func() bool { return r.has("agent-ready") })
	wrapper, agent := r.cmd.Process.Pid, r.agentPid(t)
	workers := []int{r.pid(t, "worker-0.pid"), r.pid(t, "worker-1.pid")}

	require.NoError(t, syscall.Kill(wrapper, syscall.SIGSTOP))
	r.waitFor(ctx, t, "the wrapper stopped", func() bool { return procStat(wrapper)[0] == "T" })
	require.NoError(t, syscall.Kill(agent, syscall.SIGKILL))
	r.waitFor(ctx, t, "the workers handed to the wrapper", func() bool {
		return procStat(workers[0])[1] == strconv.Itoa(wrapper) && procStat(workers[1])[1] == strconv.Itoa(wrapper)
	})
	require.NoError(t, syscall.Kill(wrapper, syscall.SIGTERM))
	require.NoError(t, syscall.Kill(wrapper, syscall.SIGCONT))

	assert.Equal(t, 0, r.wait(ctx, t))
	for i := range workers {
		assert.Equal(t, "term ppid="+strconv.Itoa(wrapper), r.read(t, fmt.Sprintf("worker-%d.term", i)),
			"worker %d got SIGTERM and was waited for", i)
	}
	slices.Sort(workers)
	assert.Equal(t, "edl: SIGTERM: the agent is killed, its workers "+pyList(workers)+" told to stop\n", r.output(t))
	assertGone(t, append([]int{agent}, workers...)...)
}

// TestWrapperSignalledBeforeTheAgentStarts sends the signal before the
// wrapper's first line: testdata/launch.py blocks it, sends it to itself and
// runs the wrapper, which finds it pending. That is the earliest a signal can
// come, so every line before the agent's start is covered, with no hook in
// the wrapper. The launcher's audit hook says every process the wrapper
// starts: the agent is not even spawned (the stand-in's trace alone would
// miss an agent killed before its first line). A wrapper that took the signal
// only once the agent runs (a handler installed after the start) fails both.
func TestWrapperSignalledBeforeTheAgentStarts(t *testing.T) {
	for _, sig := range []string{"SIGTERM", "SIGINT"} {
		t.Run(sig, func(t *testing.T) {
			ctx := testContext(t)
			r := start(ctx, t, "workers 1", launchedBy("pending "+sig))

			assert.Equal(t, 0, r.wait(ctx, t))
			assert.Empty(t, r.startedArgs(t), "the agent is never started")
			assert.Equal(t, "edl: "+sig+" before torchrun started; not started\n", r.output(t),
				"one line, and no process started")
		})
	}
}

// TestWrapperSignalledWhileTheAgentStarts sends SIGTERM as the wrapper
// starts the agent (testdata/launch.py's audit hook, at the spawn): too late
// for the agent not to start, so the wrapper leaves as it does later, and
// the signal is not lost.
func TestWrapperSignalledWhileTheAgentStarts(t *testing.T) {
	ctx := testContext(t)
	r := start(ctx, t, "workers 1", launchedBy("sigterm-at-spawn"))

	assert.Equal(t, 0, r.wait(ctx, t), "the wrapper took the signal and left")
	assert.Regexp(t, regexp.MustCompile(`^edl: SIGTERM: the agent is killed, its workers \[[0-9, ]*\] told to stop\n$`), r.output(t))
	assert.False(t, r.has("agent-signals"), "the agent caught %q", r.read(t, "agent-signals"))
	var left []int
	if r.has("worker-0.pid") {
		left = append(left, r.pid(t, "worker-0.pid"))
	}
	if r.has("agent-started") {
		left = append(left, r.agentPid(t))
	}
	assertGone(t, left...)
}

func TestWrapperDoesNotRunAnEndedTrainingAgain(t *testing.T) {
	ctx := testContext(t)
	state := t.TempDir()
	first := start(ctx, t, "exit 0", withStateDir(state))
	require.Equal(t, 0, first.wait(ctx, t))
	finished, err := os.ReadFile(filepath.Join(state, "finished"))
	require.NoError(t, err, "the first run's exit 0 is recorded")

	// The ReplicaSet's restartPolicy Always starts the container again.
	again := start(ctx, t, "exit 0", withStateDir(state))
	again.waitFor(ctx, t, "the wrapper's line", func() bool { return strings.HasSuffix(again.output(t), "\n") })
	assert.Equal(t, "edl: the training ended (exit 0 at "+strings.TrimSpace(string(finished))+"); not started again\n", again.output(t))
	select {
	case <-again.exited:
		t.Fatal("the wrapper exited by itself: its container would be restarted again and again")
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, again.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, again.wait(ctx, t))
	assert.Empty(t, again.startedArgs(t), "the agent is not started again")
}

func TestWrapperWithoutAStateDirRunsEveryTime(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name string
		opts []option
	}{
		{"EDL_STATE_DIR unset", nil},
		{"EDL_STATE_DIR empty", []option{withStateDir("")}},
		{"EDL_STATE_DIR missing", []option{withStateDir(missing)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			for run := 1; run <= 2; run++ {
				r := start(ctx, t, "exit 0", tc.opts...)
				assert.Equal(t, 0, r.wait(ctx, t))
				assert.Equal(t, [][]string{trainArgs}, r.startedArgs(t), "run %d: the agent starts every time", run)
				assert.Empty(t, r.output(t))
				assert.Empty(t, entries(t, r.cmd.Dir), "nothing is written in the working directory")
			}
			assert.NoDirExists(t, missing, "a missing state dir is not created")
		})
	}
}

// config is how a test starts the wrapper; an option changes it.
type config struct {
	launch         string  // a mode of testdata/launch.py, or python3 -c
	stateDir       *string // EDL_STATE_DIR; nil: unset
	terminationLog string  // EDL_TERMINATION_LOG; "": unset
}

type option func(*config)

func withStateDir(dir string) option { return func(c *config) { c.stateDir = &dir } }
func launchedBy(mode string) option  { return func(c *config) { c.launch = mode } }
func withTerminationLog(path string) option {
	return func(c *config) { c.terminationLog = path }
}

// run is one run of the wrapper and its stand-in agent.
type run struct {
	cmd    *exec.Cmd
	traces string        // the stand-in's EDL_STANDIN_DIR
	out    string        // the file holding the wrapper's stderr and stdout
	exited chan struct{} // closed once cmd.Wait returned
}

// start runs `python3 -c <Wrapper> <trainArgs>`, its agent the stand-in doing
// standIn, until ctx ends.
func start(ctx context.Context, t *testing.T, standIn string, opts ...option) *run {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not on PATH; the wrapper's tests run it, as every trainer does")
	}
	dir := t.TempDir()
	r := &run{traces: filepath.Join(dir, "traces"), out: filepath.Join(dir, "out"), exited: make(chan struct{})}
	standInDir := filepath.Join(dir, "standin")
	require.NoError(t, os.CopyFS(standInDir, os.DirFS("testdata/standin")))
	cwd := filepath.Join(dir, "cwd")
	for _, d := range []string{r.traces, cwd} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}

	args := append([]string{"-c", Wrapper}, trainArgs...)
	if c.launch != "" {
		launch, err := filepath.Abs("testdata/launch.py")
		require.NoError(t, err)
		args = append([]string{launch, c.launch, Wrapper}, trainArgs...)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EDL_") && !strings.HasPrefix(kv, "PYTHON") {
			env = append(env, kv)
		}
	}
	env = append(env, "PYTHONPATH="+standInDir, "PYTHONDONTWRITEBYTECODE=1",
		"EDL_STANDIN="+standIn, "EDL_STANDIN_DIR="+r.traces)
	if c.stateDir != nil {
		env = append(env, "EDL_STATE_DIR="+*c.stateDir)
	}
	if c.terminationLog != "" {
		env = append(env, "EDL_TERMINATION_LOG="+c.terminationLog)
	}
	out, err := os.Create(r.out)
	require.NoError(t, err)
	defer func() { _ = out.Close() }()

	r.cmd = exec.CommandContext(ctx, python, args...)
	r.cmd.Env, r.cmd.Dir, r.cmd.Stdout, r.cmd.Stderr = env, cwd, out, out
	require.NoError(t, r.cmd.Start())
	go func() {
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(r.stop)
	return r
}

// stop ends the run and whatever it left: every process whose environment
// names this run's traces, so no other process is touched.
func (r *run) stop() {
	_ = r.cmd.Process.Kill()
	<-r.exited
	mark := []byte("\x00EDL_STANDIN_DIR=" + r.traces + "\x00")
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err == nil && strings.Contains("\x00"+string(env), string(mark)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// wait returns the wrapper's exit code. A wrapper killed by a signal, or
// still running when ctx ends, fails the test.
func (r *run) wait(ctx context.Context, t *testing.T) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-ctx.Done():
		t.Fatalf("the wrapper did not exit: %v; its output:\n%s", ctx.Err(), r.output(t))
	}
	status := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if status.Signaled() {
		t.Fatalf("the wrapper died by %v, when it must exit; its output:\n%s", status.Signal(), r.output(t))
	}
	return status.ExitStatus()
}

// waitFor polls cond until it holds; the wrapper's exit, or ctx's end,
// fails the test.
func (r *run) waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		if cond() {
			return true, nil
		}
		select {
		case <-r.exited:
			return false, fmt.Errorf("the wrapper exited (%v)", r.cmd.ProcessState)
		default:
			return false, nil
		}
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; its output:\n%s", what, err, r.output(t))
	}
}

func (r *run) output(t *testing.T) string {
	b, err := os.ReadFile(r.out)
	require.NoError(t, err)
	return string(b)
}

func (r *run) has(trace string) bool {
	_, err := os.Stat(filepath.Join(r.traces, trace))
	return err == nil
}

func (r *run) read(t *testing.T, trace string) string {
	b, err := os.ReadFile(filepath.Join(r.traces, trace))
	if err != nil && !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	return string(b)
}

func (r *run) pid(t *testing.T, trace string) int {
	pid, err := strconv.Atoi(r.read(t, trace))
	require.NoError(t, err, "%s holds a pid", trace)
	return pid
}

// starts are the stand-in's lines in agent-started: pid, then arguments.
func (r *run) starts(t *testing.T) [][]string {
	var starts [][]string
	for _, line := range strings.Split(strings.TrimSpace(r.read(t, "agent-started")), "\n") {
		if line != "" {
			starts = append(starts, strings.SplitN(line, " ", 2))
		}
	}
	return starts
}

// startedArgs are torchrun's arguments in each start of the agent.
func (r *run) startedArgs(t *testing.T) [][]string {
	var all [][]string
	for _, s := range r.starts(t) {
		var args []string
		require.NoError(t, json.Unmarshal([]byte(s[1]), &args))
		all = append(all, args)
	}
	return all
}

func (r *run) agentPid(t *testing.T) int {
	starts := r.starts(t)
	require.Len(t, starts, 1, "the agent started once")
	pid, err := strconv.Atoi(starts[0][0])
	require.NoError(t, err)
	return pid
}

// assertGone asserts that no process has these pids, not even a zombie:
// the wrapper waited for each, and reaped it.
func assertGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			t.Errorf("process %d is left: %s", pid, stat)
		}
	}
}

// procStat is a process's state and parent, from /proc/<pid>/stat; two
// empty strings when it is gone.
func procStat(pid int) [2]string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return [2]string{}
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return [2]string{fields[0], fields[1]}
}

func entries(t *testing.T, dir string) []string {
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// pyList is how Python prints a list of ints.
func pyList(ints []int) string {
	s := make([]string, len(ints))
	for i, n := range ints {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	t.Cleanup(cancel)
	return ctx
}
