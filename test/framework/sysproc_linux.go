package framework

import "syscall"

// sysProcAttr puts a child in its own process group, so Stop can signal all
// of it, and has the kernel kill it when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
