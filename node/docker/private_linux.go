//go:build linux

package docker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"
)

// private keeps the files of the node directories it watches readable by their owner only. A server in a
// container runs with the container's umask, 022 (Docker has no setting for it, and the offline image has no
// shell to set one), and Sentinel rewrites its config, which holds the password, as a new 0644 file whenever
// its state changes (start-up, a failover, a replica found). Each file is made private as soon as it appears
// or changes mode (inotify), and every directory is swept once more when its container is gone, so that
// a rewrite at shutdown is caught too. The directories themselves are 0700 (node.Start).
type private struct {
	f    *os.File // the inotify instance, non-blocking: its reader waits in the poller and ends at Close
	mu   sync.Mutex
	dirs map[int32]string // watch descriptor -> directory
	done chan struct{}
}

const watchMask = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE

func newPrivate() (*private, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	p := &private{f: os.NewFile(uintptr(fd), "inotify"), dirs: map[int32]string{}, done: make(chan struct{})}
	go p.loop()
	return p, nil
}

// watch makes dir's files private now and from now on.
func (p *private) watch(dir string) error {
	var wd int
	err := p.control(func(fd int) (err error) {
		wd, err = syscall.InotifyAddWatch(fd, dir, watchMask)
		return err
	})
	if err != nil {
		return &fs.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	p.mu.Lock()
	p.dirs[int32(wd)] = dir
	p.mu.Unlock()
	return sweep(dir)
}

func (p *private) control(f func(fd int) error) error {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (p *private) loop() {
	defer close(p.done)
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := p.f.Read(buf)
		if err != nil {
			return // closed
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&syscall.IN_Q_OVERFLOW != 0 { // events were lost: look at everything
				p.sweepAll()
				continue
			}
			p.mu.Lock()
			dir, ok := p.dirs[ev.Wd]
			p.mu.Unlock()
			if ok && len(name) > 0 {
				_ = privatize(filepath.Join(dir, cstring(name)))
			}
		}
	}
}

// forget stops watching dir and sweeps it a last time: its server is gone.
func (p *private) forget(dir string) error {
	p.mu.Lock()
	for wd, d := range p.dirs {
		if d == dir {
			delete(p.dirs, wd)
			_ = p.control(func(fd int) error { _, err := syscall.InotifyRmWatch(fd, uint32(wd)); return err })
		}
	}
	p.mu.Unlock()
	return sweep(dir)
}

func (p *private) sweepAll() error {
	p.mu.Lock()
	var dirs []string
	for _, d := range p.dirs {
		dirs = append(dirs, d)
	}
	p.mu.Unlock()
	var errs []error
	for _, d := range dirs {
		errs = append(errs, sweep(d))
	}
	return errors.Join(errs...)
}

// Close sweeps every directory a last time and stops watching.
func (p *private) Close() error {
	err := p.sweepAll()
	p.f.Close()
	<-p.done
	return err
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
