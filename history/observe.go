package history

// Observe makes f see every operation record (invoke and completion) right after it is written, in the
// goroutine that recorded it: lock-aware faults are fired from there, before that client goes on. The
// record's Time is not stamped (the recorder stamps under its lock); f reads the clock itself if needed.
// Set it before the workload starts; f must be quick.
func (r *Recorder) Observe(f func(Record)) { r.observe.Store(&f) }

func (r *Recorder) notify(rec Record) {
	if f := r.observe.Load(); f != nil {
		(*f)(rec)
	}
}
