package node

import (
	"os/exec"
	"syscall"
)

// DieWithParent has cmd's process get sig when the thread that started it (its parent) dies, even by
// kill -9: Linux's parent-death signal. cmd.SysProcAttr must be set.
func DieWithParent(cmd *exec.Cmd, sig syscall.Signal) { cmd.SysProcAttr.Pdeathsig = sig }

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
