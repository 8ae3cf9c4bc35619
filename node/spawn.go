package node

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Children must die with lockcheck, even on kill -9. Pdeathsig is tied to the OS thread that forked the
// child, and the Go runtime may retire threads, so every child is started from one locked thread that never
// exits.
var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the process
			privateUmask()
			for req := range spawnCh {
				req.done <- req.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	DieWithParent(cmd, syscall.SIGKILL)
	cmd.SysProcAttr.Setpgid = true // Ctrl-C on the terminal goes to lockcheck, which then stops its nodes in order
	req := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- req
	return <-req.done
}

// StartChild starts cmd as lockcheck starts its servers: in its own process group, killed with lockcheck
// (Pdeathsig), so a lock client's worker process never outlives the run.
func StartChild(cmd *exec.Cmd) error { return start(cmd) }
