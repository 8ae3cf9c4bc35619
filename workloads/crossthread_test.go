package workloads

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/redistest"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/node"
)

// lyingClient hands out RLocks whose isHeldByCurrentThread says true to every thread: the negative
// control of the held read.
type lyingClient struct {
	locks.MutexClient
	rec *history.Recorder
}

func (c lyingClient) Mutex(keys []string, thread int64) locks.Mutex {
	return lyingLock{c.MutexClient.Mutex(keys, thread).(*locks.RLock), c}
}

type lyingLock struct {
	*locks.RLock
	c lyingClient
}

// Held answers true without asking Redis, recorded as the RLock records its reads.
func (l lyingLock) Held(context.Context) (bool, error) {
	op := l.c.rec.Invoke(history.Record{Client: l.c.Name(), Thread: threadOf(l.Owner()), Key: l.Key(), Owner: l.Owner(), F: "held"})
	op.Ok(history.Int64(1), nil)
	return true, nil
}

func threadOf(owner string) int64 { return int64(owner[len(owner)-1] - '0') }

// crossRun drives two Redisson clients of two threads each with stray releases, reads and force-unlocks
// against a real Redis for d, and returns the history.
func crossRun(t *testing.T, lying bool, seed int64, d time.Duration) *history.History {
	t.Helper()
	n := redistest.Start(t, node.PersistNone)
	scripts, err := locks.LoadScripts("redisson", "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, history.NewClock())
	var clients []locks.Client
	for _, name := range []string{"c1", "c2"} {
		c, err := locks.RedissonClients(locks.VariantLock, false)(locks.Env{Client: name, Addrs: []string{n.Addr()},
			Password: n.Password(), Scripts: scripts, Redisson: locks.DefaultRedissonConfig(), Rec: rec})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if lying {
			c = lyingClient{c.(locks.MutexClient), rec}
		}
		clients = append(clients, c)
	}
	m := Mutex{Keys: 1, Group: 1, Wait: time.Second, Hold: Range{5 * time.Millisecond, 20 * time.Millisecond}, Threads: 2,
		Reentry: 0.2, Reentrant: true, Seed: seed, CrossThread: 0.5, ForceUnlock: 0.1}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	time.AfterFunc(d, func() { close(stop) })
	m.Run(context.Background(), stop, clients, rec, NewResource(rec))
	for _, c := range clients {
		c.Close()
	}
	h, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// With a correct RLock every cross-thread operation is judged legal, each kind of them is in the history,
// and the checkers of what forceUnlock does by design stay valid; with a held read that lies, the model
// finds a thread told it holds a lock it does not.
func TestCrossThreadRLock(t *testing.T) {
	h := crossRun(t, false, 1, 2*time.Second)
	seen := map[string]int{}
	for _, o := range h.Ops {
		f := o.Invoke.F
		if f == "unlock" && o.Invoke.Args["stray"] == 1 {
			f = "stray unlock"
			if o.Outcome() != history.Fail || o.Complete.Value == nil || *o.Complete.Value != -1 {
				t.Errorf("a stray release was not refused as not held: %+v", o.Complete)
			}
		}
		seen[f]++
	}
	for _, f := range []string{"stray unlock", "held", "is_locked", "force_release", "isHeld", "isLocked", "forceUnlock"} {
		if seen[f] == 0 {
			t.Errorf("no %s in the history (%v)", f, seen)
		}
	}
	if !porcupine.CheckOperations(checker.MutexModel.ToModel(), checker.MutexOps(h)) {
		t.Error("the model found a correct RLock's history illegal")
	}
	for _, c := range []checker.Checker{checker.Exclusion{}, checker.LostLock{}, checker.ToldOfLoss{}} {
		if r := c.Check(context.Background(), h); r.Valid == checker.Invalid {
			t.Errorf("%s: %s %s", c.Name(), r.Summary, r.Violation)
			for _, o := range h.Ops {
				if o.Invoke.Time > r.At-300e6 && o.Invoke.Time < r.At+30e6 {
					t.Logf("%+v -> %+v", o.Invoke, o.Complete)
				}
			}
		}
	}

	lied := crossRun(t, true, 1, 2*time.Second)
	if porcupine.CheckOperations(checker.MutexModel.ToModel(), checker.MutexOps(lied)) {
		t.Error("a held read that says true to every thread was judged legal")
	}
}
