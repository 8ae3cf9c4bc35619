//go:build !linux

package docker

import (
	"errors"
	"sync"
)

// private, off Linux (no inotify), sweeps each node directory when it is watched, when its container is
// gone and at Close; between sweeps the directories' mode 0700 keeps Sentinel's rewrites private.
type private struct {
	mu   sync.Mutex
	dirs map[string]bool
}

func newPrivate() (*private, error) { return &private{dirs: map[string]bool{}}, nil }

func (p *private) watch(dir string) error {
	p.mu.Lock()
	p.dirs[dir] = true
	p.mu.Unlock()
	return sweep(dir)
}

func (p *private) forget(dir string) error {
	p.mu.Lock()
	delete(p.dirs, dir)
	p.mu.Unlock()
	return sweep(dir)
}

func (p *private) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for d := range p.dirs {
		errs = append(errs, sweep(d))
	}
	return errors.Join(errs...)
}
