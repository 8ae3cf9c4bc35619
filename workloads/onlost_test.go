package workloads

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
)

// signalling is a lock that grants at once and says the hold is lost lostAfter after each grant, as
// Redisson's watchdog or a worker's lost event would.
type signalling struct {
	key       string
	lostAfter time.Duration
	mu        sync.Mutex
	sig       chan struct{}
}

func (l *signalling) Key() string   { return l.key }
func (l *signalling) Owner() string { return "c1:1" }
func (l *signalling) TryLock(context.Context, time.Duration, time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sig == nil { // a re-entry keeps the hold's signal
		sig := make(chan struct{})
		l.sig = sig
		time.AfterFunc(l.lostAfter, func() { close(sig) })
	}
	return true, nil
}
func (l *signalling) Unlock(context.Context) error {
	l.mu.Lock()
	l.sig = nil
	l.mu.Unlock()
	return nil
}
func (l *signalling) LostSignal() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sig
}

type signallingClient struct{ l *signalling }

func (c signallingClient) Name() string                      { return "c1" }
func (c signallingClient) Close() error                      { return nil }
func (c signallingClient) Gate() *locks.Gate                 { return nil }
func (c signallingClient) Mutex([]string, int64) locks.Mutex { return c.l }

// With --on-lost stop a critical section ends at the library's loss signal; with continue it lasts its
// whole hold (issue 23, item 4). Holds are 2 s and the signal comes 100 ms after each grant.
func TestOnLostStopEndsTheSectionAtTheSignal(t *testing.T) {
	for _, mode := range []OnLost{ContinueOnLost, StopOnLost} {
		t.Run(mode.String(), func(t *testing.T) {
			var buf bytes.Buffer
			rec := history.NewRecorder(&buf, history.NewClock())
			m := Mutex{Keys: 1, Group: 1, Wait: time.Second, Hold: Range{2 * time.Second, 2 * time.Second}, Reentrant: true,
				Threads: 1, Seed: 1, OnLost: mode}
			stop := make(chan struct{})
			time.AfterFunc(900*time.Millisecond, func() { close(stop) })
			m.Run(context.Background(), stop, []locks.Client{signallingClient{&signalling{key: "lock-0", lostAfter: 100 * time.Millisecond}}},
				rec, NewResource(rec))
			h, err := history.Read(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Sections) == 0 {
				t.Fatal("no critical section recorded")
			}
			long := 0
			for _, s := range h.Sections {
				if time.Duration(s.Exit-s.Enter) > 500*time.Millisecond {
					long++
				}
			}
			switch {
			case mode == StopOnLost && long > 0:
				t.Fatalf("%d of %d sections outlived the loss signal by far", long, len(h.Sections))
			case mode == ContinueOnLost && long == 0:
				t.Fatal("continue ended the sections early (the stop was cut short by the workload's end?)")
			}
		})
	}
}
