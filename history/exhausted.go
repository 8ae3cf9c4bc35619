package history

import (
	"errors"
	"syscall"
)

// noteErr counts a completion whose error is the process running out of file descriptors: those are the
// harness's failures, not the system's under test, and the run must say so.
func (r *Recorder) noteErr(err error) {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		r.outOfFDs.Add(1)
	}
}

// OutOfDescriptors is how many operations failed because lockcheck ran out of file descriptors.
func (r *Recorder) OutOfDescriptors() int64 { return r.outOfFDs.Load() }
