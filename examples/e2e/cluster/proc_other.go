//go:build !linux

package cluster

import "syscall"

// sysProcAttr: only Linux can tie the child's life to the parent's; elsewhere
// Stop must run (the e2e tests are supported on Linux only).
func sysProcAttr() *syscall.SysProcAttr { return nil }
