package worker

import (
	"context"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workloads"
)

// An extend is recorded as the model's renew: a holder's extend is legal, a refused one after the lease
// ran out and another owner took the lock is legal, and a library that says "extended" on that lost lock
// (redsync up to v4.0.3) is flagged by porcupine.
func TestExtendRecordedAsRenew(t *testing.T) {
	for _, mode := range []string{"1", "buggy-extend"} {
		t.Run(mode, func(t *testing.T) {
			c, buf, failed, err := startWorker(t, mode, time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			l := c.Mutex([]string{"k"}, 1)
			if ok, _ := l.TryLock(ctx, 0, 100*time.Millisecond); !ok {
				t.Fatal("grant")
			}
			x := l.(locks.Extender)
			if got := x.ExtendLease(); got != 100*time.Millisecond {
				t.Fatalf("ExtendLease = %s, want the grant's 100ms", got)
			}
			if ok, err := x.Extend(ctx, 100*time.Millisecond); !ok || err != nil {
				t.Fatalf("holder's extend: %v %v", ok, err)
			}
			time.Sleep(150 * time.Millisecond) // the lease runs out
			if ok, _ := c.Mutex([]string{"k"}, 2).TryLock(ctx, 0, time.Second); !ok {
				t.Fatal("another owner after the lease")
			}
			ok, err := x.Extend(ctx, 100*time.Millisecond)
			if err != nil || ok != (mode == "buggy-extend") {
				t.Fatalf("extend of a lost lock: %v %v", ok, err)
			}
			select {
			case err := <-failed:
				t.Fatal(err)
			default:
			}
			h := readHistory(t, buf)
			renews := 0
			for _, o := range h.Ops {
				if o.Invoke.F == "renew" && o.Invoke.Args["lease_ms"] == 100 {
					renews++
				}
			}
			if renews != 2 {
				t.Fatalf("%d renew operations recorded, want 2", renews)
			}
			legal := porcupine.CheckOperations(checker.MutexModel.ToModel(), checker.MutexOps(h))
			if legal != (mode == "1") {
				t.Fatalf("porcupine legal = %v in mode %s", legal, mode)
			}
		})
	}
}

// A lost event from the library reaches the holder (locks.Extender.Lost), and the next grant clears it.
func TestLostEventReachesHolder(t *testing.T) {
	c, _, _ := startFake(t, time.Second)
	ctx := context.Background()
	l := c.Mutex([]string{"doomed"}, 1)
	if ok, _ := l.TryLock(ctx, 0, time.Second); !ok {
		t.Fatal("grant")
	}
	x := l.(locks.Extender)
	if x.Lost() {
		t.Fatal("lost before any event")
	}
	if ok, _ := x.Extend(ctx, time.Second); !ok {
		t.Fatal("extend")
	}
	if !x.Lost() { // the event line came before the extend's reply
		t.Fatal("the lost event did not reach the holder")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := l.TryLock(ctx, 0, time.Second); !ok || x.Lost() {
		t.Fatalf("a fresh grant: ok %v, still lost %v", ok, x.Lost())
	}
}

// The mutex workload extends a long hold before each write and writes nothing once the library reports
// the hold lost, even when its extend said "extended" (node-redlock 5's using() keeps running after its
// abort signal). The same run with no lost event writes.
func TestWorkloadStopsWritingWhenLost(t *testing.T) {
	for _, mode := range []string{"1", "lose-on-extend"} {
		t.Run(mode, func(t *testing.T) {
			c, buf, failed, err := startWorker(t, mode, time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := workloads.Mutex{Keys: 1, Group: 1, Wait: 50 * time.Millisecond, Lease: 300 * time.Millisecond,
				Hold: workloads.Range{Min: 400 * time.Millisecond, Max: 400 * time.Millisecond}, Extend: true, Seed: 1}
			stop := make(chan struct{})
			time.AfterFunc(time.Second, func() { close(stop) })
			m.Run(context.Background(), stop, []locks.Client{c}, c.cfg.Rec, workloads.NewResource(c.cfg.Rec))
			select {
			case err := <-failed:
				t.Fatal(err)
			default:
			}
			h := readHistory(t, buf)
			renews := 0
			for _, o := range h.Ops {
				if o.Invoke.F == "renew" && o.Complete != nil && o.Complete.Type == history.Ok {
					renews++
				}
			}
			if renews == 0 {
				t.Fatal("no extend was made: the run proved nothing")
			}
			if lost := mode == "lose-on-extend"; lost != (len(h.Sections) == 0) {
				t.Fatalf("mode %s: %d critical sections after %d extends", mode, len(h.Sections), renews)
			}
		})
	}
}

// FitLease rounds a lease to the nearest multiple of the worker's unit, at least one unit; no unit, or no
// lease, leaves it as it is.
func TestFitLease(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct{ d, g, want time.Duration }{
		{1500 * ms, 0, 1500 * ms}, {0, time.Second, 0}, {1499 * ms, time.Second, time.Second},
		{1500 * ms, time.Second, 2 * time.Second}, {300 * ms, time.Second, time.Second}, {2 * time.Second, time.Second, 2 * time.Second},
		{2900 * ms, time.Second, 3 * time.Second}, {7 * ms, 5 * ms, 5 * ms},
	} {
		if got := FitLease(tc.d, tc.g); got != tc.want {
			t.Errorf("FitLease(%s, %s) = %s, want %s", tc.d, tc.g, got, tc.want)
		}
	}
}
