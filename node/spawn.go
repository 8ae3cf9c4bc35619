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
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true // Ctrl-C on the terminal goes to lockcheck, which then stops its nodes in order
	req := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- req
	return <-req.done
}

// privateUmask gives the spawning thread, and so every server it starts, the umask 077: Sentinel rewrites
// its config (which holds the password) as a new file with mode 0644 & ~umask. The thread first takes its
// own copy of the filesystem attributes (CLONE_FS), so lockcheck's own files keep the user's umask; the Go
// runtime never starts threads from a locked one, so the copy stays on this thread. Should that fail, the
// node directories' mode 0700 still keeps the files private.
func privateUmask() {
	if syscall.Unshare(syscall.CLONE_FS) == nil {
		syscall.Umask(0o077)
	}
}

// StartChild starts cmd as lockcheck starts its servers: in its own process group, killed with lockcheck
// (Pdeathsig), so a lock client's worker process never outlives the run.
func StartChild(cmd *exec.Cmd) error { return start(cmd) }
