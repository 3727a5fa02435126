//go:build !linux

package framework

import "syscall"

// sysProcAttr puts a child in its own process group, so Stop can signal all
// of it. Only Linux can also tie the child's life to the test binary's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
