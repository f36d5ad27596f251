//go:build linux

package cluster

import "syscall"

// sysProcAttr makes the kernel SIGKILL the server if the test binary dies
// (go test -timeout, a panic, Ctrl-C), so no server outlives its tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
