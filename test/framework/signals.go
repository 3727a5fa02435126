package framework

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// running holds the control planes not yet stopped, so that a signal that
// ends a test binary stops them first. Pdeathsig covers a crash on Linux;
// this covers ^C and kill, and keeps Stop's ordered shutdown. Programs other
// than tests (test/cmd/localcluster) handle signals themselves.
var running = struct {
	sync.Mutex
	set  map[*ControlPlane]struct{}
	once sync.Once
}{set: map[*ControlPlane]struct{}{}}

func track(cp *ControlPlane) {
	if !testing.Testing() {
		return
	}
	running.once.Do(func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		go func() {
			sig := <-signals
			running.Lock()
			cps := make([]*ControlPlane, 0, len(running.set))
			for cp := range running.set {
				cps = append(cps, cp)
			}
			running.Unlock()
			for _, cp := range cps {
				_ = cp.Stop()
			}
			// Die of the signal as if nobody had caught it.
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		}()
	})
	running.Lock()
	running.set[cp] = struct{}{}
	running.Unlock()
}

func untrack(cp *ControlPlane) {
	running.Lock()
	delete(running.set, cp)
	running.Unlock()
}
