package locks

import (
	"sync"
	"sync/atomic"
	"time"
)

// Gate freezes one client as a stop-the-world GC pause or SIGSTOP would: while it is closed, every command
// the client sends, its watchdog and its workload wait at the gate; time goes on outside. Clock is the
// client's wall clock, which a clock fault can skew. A nil *Gate is always open and unskewed.
type Gate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while paused; closed on resume
	armed  bool          // pause at the next grant
	offset atomic.Int64  // ns added to the client's wall clock
	delay  atomic.Int64  // ns the client's writes to the protected resource take to land (S3)
	// onFreeze stops what the gate cannot hold: a worker's process, whose watchdog runs on its own.
	onFreeze func()
}

// OnFreeze makes f run whenever the client freezes at a grant (Granted).
func (g *Gate) OnFreeze(f func()) {
	g.mu.Lock()
	g.onFreeze = f
	g.mu.Unlock()
}

// NewGate returns an open gate.
func NewGate() *Gate { return &Gate{} }

// Pass blocks while the client is paused.
func (g *Gate) Pass() {
	if g == nil {
		return
	}
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Pause freezes the client; Resume lets it go on.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// Arm makes the client freeze right after its next grant, inside its critical section: the process
// pause after acquire of the Redlock debate (Kleppmann's GC pause).
func (g *Gate) Arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

// Granted is called by a workload when the client has just been granted; it reports whether the client
// froze there (it then blocks until resumed).
func (g *Gate) Granted() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return false
	}
	g.armed = false
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
	f := g.onFreeze
	g.mu.Unlock()
	if f != nil {
		f()
	}
	return true
}

// Resume lets a paused client go on, and disarms it.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = false
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// Paused reports whether the client is frozen.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed != nil
}

// SetClockOffset skews the client's wall clock by d (0 resets it).
func (g *Gate) SetClockOffset(d time.Duration) { g.offset.Store(int64(d)) }

// Now is the client's wall clock.
func (g *Gate) Now() time.Time {
	if g == nil {
		return time.Now()
	}
	return time.Now().Add(time.Duration(g.offset.Load()))
}

// SetWriteDelay makes the client's writes to the protected resource land d after it sends them (0: at
// once), as a write delayed in the network between holder and resource would; the client does not wait.
func (g *Gate) SetWriteDelay(d time.Duration) { g.delay.Store(int64(d)) }

// WriteDelay is how late the client's writes land now.
func (g *Gate) WriteDelay() time.Duration {
	if g == nil {
		return 0
	}
	return time.Duration(g.delay.Load())
}
