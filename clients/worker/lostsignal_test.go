package worker

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A worker's lost event closes the hold's loss signal (what --on-lost stop waits on), and the next grant
// starts an open one.
func TestLostEventClosesLossSignal(t *testing.T) {
	c, _, _ := startFake(t, time.Second)
	ctx := context.Background()
	l := c.Mutex([]string{"doomed"}, 1)
	if ok, _ := l.TryLock(ctx, 0, time.Second); !ok {
		t.Fatal("grant")
	}
	s := l.(locks.LossSignal)
	sig := s.LostSignal()
	if sig == nil || closed(sig) {
		t.Fatalf("a worker with events: want an open signal after the grant, got %v", sig)
	}
	if ok, _ := l.(locks.Extender).Extend(ctx, time.Second); !ok { // the fake reports the loss before its reply
		t.Fatal("extend")
	}
	if !closed(sig) {
		t.Fatal("the lost event did not close the signal")
	}
	_ = l.Unlock(ctx)
	if ok, _ := l.TryLock(ctx, 0, time.Second); !ok || closed(s.LostSignal()) {
		t.Fatalf("a fresh grant: ok %v, its signal closed %v", ok, closed(s.LostSignal()))
	}
}
