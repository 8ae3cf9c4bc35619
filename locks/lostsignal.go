package locks

import "sync"

// LossSignal is a held lock whose library tells its holder that the lock was lost (Redisson's watchdog
// finding the lock no longer its own, a worker's lost event). The workload ends its critical section at
// the signal when the application is told to (--on-lost stop).
type LossSignal interface {
	// LostSignal is closed once the library says the hold begun by the last grant is lost; it never
	// closes (nil) when the library says nothing for this hold.
	LostSignal() <-chan struct{}
}

// LossSignals keeps one signal per hold (a key and owner): armed at each grant, closed at the loss. The
// zero value is ready.
type LossSignals struct {
	mu  sync.Mutex
	chs map[[2]string]*lossSignal
}

type lossSignal struct {
	ch     chan struct{}
	closed bool
}

// Arm starts a fresh signal for a new grant of key to owner; with watched false the library will say
// nothing of this hold (no watchdog keeps it), and the hold has no signal.
func (s *LossSignals) Arm(key, owner string, watched bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chs == nil {
		s.chs = map[[2]string]*lossSignal{}
	}
	k := [2]string{key, owner}
	if !watched {
		delete(s.chs, k)
		return
	}
	if cur := s.chs[k]; cur == nil || cur.closed { // a re-entry keeps the hold's signal
		s.chs[k] = &lossSignal{ch: make(chan struct{})}
	}
}

// Fire closes the signal of key's hold by owner, if it has one.
func (s *LossSignals) Fire(key, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.chs[[2]string{key, owner}]; l != nil && !l.closed {
		l.closed = true
		close(l.ch)
	}
}

// Signal is the signal of key's current hold by owner (nil: none).
func (s *LossSignals) Signal(key, owner string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.chs[[2]string{key, owner}]; l != nil {
		return l.ch
	}
	return nil
}

// LostSignal closes when the watchdog's renewal finds the lock no longer this thread's: Redisson drops
// the lock from its renewals then and says nothing; lockcheck's application may listen (--on-lost stop).
func (l *RLock) LostSignal() <-chan struct{} { return l.r.losses.Signal(l.name, l.Owner()) }
