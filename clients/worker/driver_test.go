package worker

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// The driver's mechanics are tested against this test binary run as a worker (LOCKCHECK_TEST_WORKER=1):
// a lock that needs no Redis, whose acquire waits as long as it is told and reports events, so that
// ordering, pauses and bounds are exact. The naive worker against real Redis is tested in cmd/lockcheck.
func TestMain(m *testing.M) {
	switch os.Getenv("LOCKCHECK_TEST_WORKER") {
	case "mute": // never answers init
		select {}
	case "slow": // a runtime that takes a while to start
		time.Sleep(time.Second)
	case "flood", "reply", "escape":
		hostileWorker(os.Getenv("LOCKCHECK_TEST_WORKER"))
	}
	if os.Getenv("LOCKCHECK_TEST_WORKER") != "" {
		sdk.Serve(sdk.Worker{Library: cmp.Or(os.Getenv("LOCKCHECK_TEST_LIBRARY"), "fake"), Version: "0", Kinds: []string{"naive"}, Caps: []string{"events", "extend"},
			Connect: func(_ context.Context, init *sdk.Message, emit func(sdk.Message)) (sdk.Mutex, error) {
				if os.Getenv("LOCKCHECK_TEST_WORKER") == "leak" { // a library that logs its settings
					fmt.Fprintf(os.Stderr, "connecting with password=%s\n", init.Password)
				}
				return &fake{emit: emit, held: map[string]*hold{}}, nil
			}})
	}
	os.Exit(m.Run())
}

// fake is a re-entrant lock with leases, in the worker's memory.
type fake struct {
	emit func(sdk.Message)
	mu   sync.Mutex
	held map[string]*hold
}

type hold struct {
	thread int64
	n      int
	until  time.Time
}

// get is the live hold on key, after expiring a lapsed one.
func (f *fake) get(key string) *hold {
	if h := f.held[key]; h != nil && time.Now().After(h.until) {
		delete(f.held, key)
	}
	return f.held[key]
}

func (f *fake) Acquire(_ context.Context, thread int64, keys []string, wait, lease time.Duration) (sdk.Grant, error) {
	if keys[0] == "hang" {
		select {}
	}
	time.Sleep(wait) // a slow grant, so that a later request of another thread is answered first
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.get(keys[0])
	if h != nil && h.thread != thread {
		return sdk.Grant{}, nil
	}
	if h == nil {
		h = &hold{thread: thread}
		f.held[keys[0]] = h
	}
	h.n++
	h.until = time.Now().Add(lease)
	f.emit(sdk.Message{Event: "renewed", Thread: thread, Key: keys[0], Text: "granted and renewed"})
	return sdk.Grant{Granted: true, Token: 7}, nil
}

func (f *fake) Release(_ context.Context, thread int64, keys []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.get(keys[0])
	if h == nil || h.thread != thread {
		return sdk.ErrNotHeld
	}
	if h.n--; h.n == 0 {
		delete(f.held, keys[0])
	}
	return nil
}

// Extend moves the holder's lease. In mode buggy-extend it says extended on a lock it does not hold, as
// redsync up to v4.0.3 did.
func (f *fake) Extend(_ context.Context, thread int64, keys []string, lease time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.get(keys[0])
	if h == nil || h.thread != thread {
		return os.Getenv("LOCKCHECK_TEST_WORKER") == "buggy-extend", nil
	}
	h.until = time.Now().Add(lease)
	if keys[0] == "doomed" || os.Getenv("LOCKCHECK_TEST_WORKER") == "lose-on-extend" { // the library's own renewal found it lost, reported before this reply
		f.emit(sdk.Message{Event: "lost", Thread: thread, Key: keys[0], Text: "renewal failed"})
	}
	return true, nil
}

func startFake(t *testing.T, slack time.Duration) (*Client, *bytes.Buffer, chan error) {
	t.Helper()
	c, buf, failed, err := startWorker(t, "1", slack, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, buf, failed
}

func startWorker(t *testing.T, mode string, slack, startup time.Duration) (*Client, *bytes.Buffer, chan error, error) {
	t.Helper()
	return startWorkerCtx(t, context.Background(), mode, slack, startup)
}

func startWorkerCtx(t *testing.T, ctx context.Context, mode string, slack, startup time.Duration) (*Client, *bytes.Buffer, chan error, error) {
	t.Helper()
	t.Setenv("LOCKCHECK_TEST_WORKER", mode)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	failed := make(chan error, 1)
	c, err := Start(Config{Client: "c1", Argv: []string{exe}, Dir: t.TempDir(), Rec: history.NewRecorder(&buf, history.NewClock()),
		Init:  sdk.Message{Lock: &sdk.Lock{Kind: "naive", Family: "mutex"}, Options: &sdk.Options{LeaseMs: 1000, TimeoutMs: 10}},
		Slack: slack, Startup: startup, Ctx: ctx, OnFail: func(err error) {
			select {
			case failed <- err:
			default:
			}
		}})
	if err != nil {
		return nil, nil, nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, &buf, failed, nil
}

func readHistory(t *testing.T, buf *bytes.Buffer) *history.History {
	t.Helper()
	h, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Replies are matched by msg_id, not order: a slow grant on one thread does not hold up another's
// refusal, each is recorded with the outcome it got, and events land in the history.
func TestRepliesMatchedByID(t *testing.T) {
	c, buf, _ := startFake(t, time.Second)
	ctx := context.Background()
	slow := make(chan bool)
	go func() {
		ok, _ := c.Mutex([]string{"k"}, 1).TryLock(ctx, 300*time.Millisecond, 0)
		slow <- ok
	}()
	time.Sleep(100 * time.Millisecond) // thread 1's request is written first
	other := c.Mutex([]string{"k2"}, 2)
	if ok, err := other.TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("thread 2: %v %v", ok, err)
	}
	if !<-slow {
		t.Fatal("thread 1 was not granted")
	}
	if err := c.Mutex([]string{"k"}, 2).Unlock(ctx); err == nil || !strings.Contains(err.Error(), locks.ErrNotHeld.Error()) {
		t.Fatalf("release by a non-holder: %v", err)
	}
	if tok := other.(locks.Fenced).Token(); tok != 7 {
		t.Fatalf("token %d", tok)
	}
	h := readHistory(t, buf)
	var order []int64
	for _, o := range h.Ops {
		if o.Invoke.F == "acquire" {
			if o.Outcome() != history.Ok || o.Invoke.Args["lease_ms"] != 1000 {
				t.Fatalf("acquire recorded as %+v / %+v", o.Invoke, o.Complete)
			}
			order = append(order, o.Invoke.Thread)
			if o.Invoke.Thread == 2 && o.Complete.Time > h.Ops[0].Complete.Time {
				t.Fatal("thread 2's grant completed after thread 1's slow one")
			}
		}
		if o.Invoke.F == "release" && (o.Outcome() != history.Fail || o.Complete.Value == nil || *o.Complete.Value != -1) {
			t.Fatalf("not-held release recorded as %+v", o.Complete)
		}
	}
	if len(order) != 2 || order[0] != 1 {
		t.Fatalf("acquires %v, want thread 1's invoked first", order)
	}
	if len(h.Events) != 2 || h.Events[0].F != "renewed" || h.Events[0].Client != "c1" {
		t.Fatalf("events: %+v", h.Events)
	}
}

// A request unanswered past its bound kills the worker: the pending operation ends unknown, OnFail
// names it, and later calls fail at once, definitely.
func TestUnansweredRequestKillsWorker(t *testing.T) {
	c, buf, failed := startFake(t, 500*time.Millisecond)
	_, err := c.Mutex([]string{"hang"}, 1).TryLock(context.Background(), 0, 0)
	if err == nil || locks.Definite(err) {
		t.Fatalf("hung acquire: %v", err)
	}
	select {
	case ferr := <-failed:
		if !strings.Contains(ferr.Error(), "client c1: worker hung: it left acquire") || !strings.Contains(ferr.Error(), "unanswered") {
			t.Fatalf("OnFail: %v", ferr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnFail not called")
	}
	if _, err := c.Mutex([]string{"k"}, 2).TryLock(context.Background(), 0, 0); err == nil || !locks.Definite(err) {
		t.Fatalf("a call after the worker died: %v", err)
	}
	<-c.exited
	h := readHistory(t, buf)
	if len(h.Ops) != 1 || h.Ops[0].Outcome() != history.Unknown {
		t.Fatalf("ops: %+v", h.Ops)
	}
}

// Time the worker spends frozen by client-pause does not count against the bound: a request written
// while it is frozen, answered after SIGCONT, is fine, however long the pause.
func TestPausedTimeNotCounted(t *testing.T) {
	c, _, failed := startFake(t, 500*time.Millisecond)
	ctx := context.Background()
	c.Arm()
	if ok, err := c.Mutex([]string{"a"}, 1).TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("grant: %v %v", ok, err)
	}
	if !c.cfg.Gate.Granted() { // the workload's thread freezes at the gate, as with the Go clients
		t.Fatal("the gate was not armed")
	}
	done := make(chan error)
	go func() {
		_, err := c.Mutex([]string{"b"}, 2).TryLock(ctx, 0, 10*time.Millisecond) // bound: 0.55 s
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a frozen worker answered: %v", err)
	case <-time.After(1500 * time.Millisecond): // three times the bound
	}
	c.Resume()
	if err := <-done; err != nil {
		t.Fatalf("after the pause: %v", err)
	}
	select {
	case err := <-failed:
		t.Fatalf("killed for a pause: %v", err)
	default:
	}
}

// --nemesis-trigger arms the pause on the grant it observes, after the driver has read that grant: the
// workload's thread freezes at the gate, and the worker process must stop there too, or its watchdog
// renews through the "pause" and the holder never loses the lock.
func TestArmedAfterGrantFreezesWorker(t *testing.T) {
	c, _, _ := startFake(t, 500*time.Millisecond)
	ctx := context.Background()
	if ok, err := c.Mutex([]string{"a"}, 1).TryLock(ctx, 0, 0); !ok || err != nil {
		t.Fatalf("grant: %v %v", ok, err)
	}
	c.Arm() // the trigger fires on that grant
	if !c.cfg.Gate.Granted() {
		t.Fatal("the gate was not armed")
	}
	done := make(chan error)
	go func() {
		_, err := c.Mutex([]string{"b"}, 2).TryLock(ctx, 0, 10*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the worker answered while its client was frozen: %v", err)
	case <-time.After(1500 * time.Millisecond): // three times the driver's bound
	}
	c.Resume()
	if err := <-done; err != nil {
		t.Fatalf("after the pause: %v", err)
	}
}

// client-stall freezes the worker at once, with no grant: nothing it is sent is answered until it resumes.
func TestPauseFreezesWorkerNow(t *testing.T) {
	c, _, _ := startFake(t, 500*time.Millisecond)
	c.Pause()
	// Every thread has stopped by the time Pause returns, not only been sent SIGSTOP: a thread still
	// running on another CPU once answered a request written after the kill (load 18 on 2 cores).
	if taskRunning(c.Pid(), c.Pid()) {
		t.Fatal("a thread of the worker was still running when Pause returned")
	}
	done := make(chan error)
	go func() {
		_, err := c.Mutex([]string{"a"}, 1).TryLock(context.Background(), 0, 10*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a stalled worker answered: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	c.Resume()
	if err := <-done; err != nil {
		t.Fatalf("after the stall: %v", err)
	}
}

// A re-entrant hold whose outer lease ran out: the nested acquire is a fresh grant and its release frees
// the lock, which lockcheck's count of holds cannot know. The history must not accuse the server of it
// (the release's depth is recorded as uncertain); recorded as "still held" it made porcupine and
// lost-lock report valid Redisson runs under client-pause as invalid.
func TestLostOuterHoldIsNotAViolation(t *testing.T) {
	c, buf, _ := startFake(t, time.Second)
	ctx := context.Background()
	outer := c.Mutex([]string{"k"}, 1)
	if ok, _ := outer.TryLock(ctx, 0, 100*time.Millisecond); !ok {
		t.Fatal("outer grant")
	}
	time.Sleep(150 * time.Millisecond) // the outer lease runs out
	other := c.Mutex([]string{"k"}, 2)
	if ok, _ := other.TryLock(ctx, 0, time.Second); !ok {
		t.Fatal("another owner after the lease")
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := outer.TryLock(ctx, 0, time.Second); !ok { // nested, to lockcheck; a fresh grant, to the lock
		t.Fatal("nested grant")
	}
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := outer.Unlock(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("outer release: %v", err)
	}
	h := readHistory(t, buf)
	if res := porcupine.CheckOperations(checker.MutexModel.ToModel(), checker.MutexOps(h)); res != true {
		t.Fatal("porcupine: no legal order")
	}
	if r := (checker.LostLock{}).Check(ctx, h); r.Valid != checker.Valid {
		t.Fatalf("lost-lock: %s", r.Violation)
	}
}

// init gets the start-up allowance on top of a request's bound (a runtime starts first), and a worker
// that never answers it is killed and named.
func TestInitBound(t *testing.T) {
	if _, _, _, err := startWorker(t, "slow", 200*time.Millisecond, 3*time.Second); err != nil {
		t.Fatalf("a worker that starts in 1 s within a 3 s allowance: %v", err)
	}
	begin := time.Now()
	_, _, _, err := startWorker(t, "mute", 200*time.Millisecond, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "client c1: worker hung: it left init") || time.Since(begin) > 5*time.Second {
		t.Fatalf("a worker that never answers init: %v after %s", err, time.Since(begin))
	}
}

// A group (MultiLock, RedLock) the library refuses, or finds not held, as a whole says nothing of each
// member: its members' commands carry no refusal for the models (a refused MultiLock may have taken some
// members for twice its wait and let them go), while a one-key refusal stays "held by someone" (-2).
func TestGroupOutcomeClaimsNoMember(t *testing.T) {
	c, buf, _ := startFake(t, time.Second)
	ctx := context.Background()
	if ok, _ := c.Mutex([]string{"a"}, 1).TryLock(ctx, 0, time.Minute); !ok {
		t.Fatal("grant of a")
	}
	if ok, _ := c.Mutex([]string{"a", "b"}, 2).TryLock(ctx, 0, time.Minute); ok {
		t.Fatal("the group was granted while a is held")
	}
	if ok, _ := c.Mutex([]string{"a"}, 3).TryLock(ctx, 0, time.Minute); ok {
		t.Fatal("a granted twice")
	}
	if err := c.Mutex([]string{"b", "a"}, 4).Unlock(ctx); err == nil {
		t.Fatal("a group nobody holds was released")
	}
	h := readHistory(t, buf)
	var got []string
	for _, o := range h.Ops {
		v := "-"
		if o.Complete.Value != nil {
			v = fmt.Sprint(*o.Complete.Value)
		}
		got = append(got, fmt.Sprintf("%s %s t%d %s %s", o.Invoke.F, o.Invoke.Key, o.Invoke.Thread, o.Outcome(), v))
	}
	want := "[acquire a t1 ok 7 acquire a t2 fail - acquire b t2 fail - acquire a t3 fail -2 release b t4 fail - release a t4 fail -]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got  %v\nwant %s", got, want)
	}
	if ops := checker.MutexOps(h); len(ops) != 2 {
		t.Fatalf("%d commands reach the model, want the grant and the one-key refusal", len(ops))
	}
}

// Issue 36 item 5: the hung bound counts the run's --lease, not the lease an acquire sends for a worker
// without a watchdog (the watchdog's timeout, 60 s here): no reply waits for a lease. Before, this worker was
// given 60.5 s.
func TestHungBoundLeavesOutSentLease(t *testing.T) {
	t.Setenv("LOCKCHECK_TEST_WORKER", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	c, err := Start(Config{Client: "c1", Argv: []string{exe}, Dir: t.TempDir(), Rec: history.NewRecorder(&bytes.Buffer{}, history.NewClock()),
		Init:  sdk.Message{Lock: &sdk.Lock{Kind: "naive", Family: "mutex"}, Options: &sdk.Options{WatchdogMs: 60000, TimeoutMs: 10}},
		Slack: 300 * time.Millisecond, OnFail: func(err error) { failed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() { _, _ = c.Mutex([]string{"hang"}, 1).TryLock(context.Background(), 0, 0) }()
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), "worker hung") || !strings.Contains(err.Error(), "lease 0s") {
			t.Fatalf("OnFail: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker was not declared hung within 10 s")
	}
}

// Issue 36 item 5: when the run is stopped (its context cancelled: Ctrl-C) a worker's pending calls end
// unknown at once, the worker is killed, and OnFail hears nothing (the worker did not fail). Before, a call
// waited for its bound.
func TestStoppedRunEndsPendingCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, _, failed, err := startWorkerCtx(t, ctx, "1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Mutex([]string{"hang"}, 1).TryLock(context.Background(), 0, 0)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // the request is out
	cancel()
	select {
	case err := <-done:
		if err == nil || locks.Definite(err) {
			t.Fatalf("the pending call ended with %v, want an indefinite error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pending call still waits 5 s after the run stopped")
	}
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker still runs 5 s after the run stopped")
	}
	select {
	case err := <-failed:
		t.Fatalf("OnFail heard of a stopped run: %v", err)
	default:
	}
}
