package worker

import (
	"os/exec"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process the child subreaper of its descendants (prctl(2)). The nodes are
// unaffected: they are its own children anyway, and die with it (Pdeathsig).
func becomeSubreaper() {
	subreaperOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// exitThenKill waits for the worker to exit without reaping it (WNOWAIT: until reaped its pid cannot be
// reused, so the group it leads is its own), kills what it left, then reaps it.
func exitThenKill(cmd *exec.Cmd, t *tree) error {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	t.kill()
	return t.reap(cmd)
}
