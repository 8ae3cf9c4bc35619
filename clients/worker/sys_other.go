//go:build !linux

package worker

import (
	"os/exec"
	"syscall"
)

// becomeSubreaper: there is no child subreaper off Linux, so a descendant that leaves the worker's
// process group and loses its parent outlives the run.
func becomeSubreaper() {}

// exitThenKill reaps the worker, then kills the process group it led (no waitid with WNOWAIT here, so
// the group is killed after the reap; a pid reused in that instant is the risk Linux does not take).
func exitThenKill(cmd *exec.Cmd, t *tree) error {
	err := t.reap(cmd)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return err
}
