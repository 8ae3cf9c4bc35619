//go:build !linux

package node

import (
	"os/exec"
	"syscall"
)

// DieWithParent has no equivalent off Linux: children are stopped by lockcheck's teardown and signal
// handling, but a kill -9 of lockcheck leaves them running.
func DieWithParent(*exec.Cmd, syscall.Signal) {}

// privateUmask: the node directories' mode 0700 keeps the configs private (no per-thread umask here).
func privateUmask() {}
