package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// hb builds histories by hand: op adds a completed operation of thread 1 of client.
type hb struct {
	h  history.History
	id int64
}

func (b *hb) op(client, f, key string, call, ret int64, typ history.Type, value *int64, args map[string]int64) *hb {
	b.id++
	inv := history.Record{Type: history.Invoke, ID: b.id, Time: call, Client: client, Thread: 1, Key: key,
		Owner: client + "-uuid:1", F: f, Args: args}
	done := inv
	done.Type, done.Time, done.Value = typ, ret, value
	b.h.Ops = append(b.h.Ops, history.OperationOf(inv, &done))
	return b
}

func v(n int64) *int64 { return &n }

func expect(t *testing.T, c Checker, h *history.History, want Validity, says string) {
	t.Helper()
	r := c.Check(context.Background(), h)
	if r.Valid != want || !strings.Contains(r.Violation+" "+r.Summary, says) {
		t.Fatalf("%s: got %v %q / %q, want %v mentioning %q", c.Name(), r.Valid, r.Summary, r.Violation, want, says)
	}
}

func TestTokens(t *testing.T) {
	ok := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(1), nil).op("c2", "acquire", "k", 2, 3, history.Ok, v(2), nil)
	expect(t, Tokens{}, &ok.h, Valid, "strictly increasing")
	same := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(5), nil).op("c2", "acquire", "k", 2, 3, history.Ok, v(5), nil)
	expect(t, Tokens{}, &same.h, Invalid, "c2 got token 5 on k")
	back := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(7), nil).op("c2", "acquire", "k", 2, 3, history.Ok, v(6), nil)
	expect(t, Tokens{}, &back.h, Invalid, "after c1 had already been given 7")
	// Concurrent grants are not ordered, so any tokens go.
	conc := (&hb{}).op("c1", "acquire", "k", 0, 5, history.Ok, v(7), nil).op("c2", "acquire", "k", 1, 6, history.Ok, v(6), nil)
	expect(t, Tokens{}, &conc.h, Valid, "")
	// ... but two owners never share a token, in either order (a CI run's S10: the promoted replica lacked
	// the counter's last INCR and gave it out again, to a call begun before the first grant was answered).
	dup := (&hb{}).op("c1", "acquire", "k", 0, 5, history.Ok, v(2), nil).op("c2", "acquire", "k", 1, 9, history.Ok, v(2), nil)
	expect(t, Tokens{}, &dup.h, Invalid, "c2 got token 2 on k at 0.000s, which c1 had been given at 0.000s")
}

func TestFairness(t *testing.T) {
	// c1 queues first (refused at 1-2), c2 queues at 3-4; c2 is granted before c1.
	b := &hb{}
	b.op("c1", "tryLock", "k", 0, 20, history.Ok, nil, nil).op("c1", "acquire", "k", 1, 2, history.Fail, v(100), nil).
		op("c1", "acquire", "k", 15, 16, history.Ok, nil, nil)
	b.op("c2", "tryLock", "k", 3, 12, history.Ok, nil, nil).op("c2", "acquire", "k", 3, 4, history.Fail, v(100), nil).
		op("c2", "acquire", "k", 10, 11, history.Ok, nil, nil)
	expect(t, Fairness{}, &b.h, Invalid, "c1 queued for k")
	// In order: c1 granted first.
	g := &hb{}
	g.op("c1", "tryLock", "k", 0, 12, history.Ok, nil, nil).op("c1", "acquire", "k", 1, 2, history.Fail, v(100), nil).
		op("c1", "acquire", "k", 10, 11, history.Ok, nil, nil)
	g.op("c2", "tryLock", "k", 3, 20, history.Ok, nil, nil).op("c2", "acquire", "k", 3, 4, history.Fail, v(100), nil).
		op("c2", "acquire", "k", 15, 16, history.Ok, nil, nil)
	expect(t, Fairness{}, &g.h, Valid, "arrival order")
	// A newcomer granted at once while c1 waits overtakes it.
	n := &hb{}
	n.op("c1", "tryLock", "k", 0, 30, history.Fail, nil, nil).op("c1", "acquire", "k", 1, 2, history.Fail, v(100), nil)
	n.op("c2", "tryLock", "k", 5, 7, history.Ok, nil, nil).op("c2", "acquire", "k", 5, 6, history.Ok, nil, nil)
	expect(t, Fairness{}, &n.h, Invalid, "c2 was granted")
	// Two overtakes: the violation told is the earliest grant (c2 past c1 at 6), not that of the waiter whose
	// call ended first (c3, passed by c4 at 32).
	two := &hb{}
	two.op("c1", "tryLock", "k", 0, 100, history.Fail, nil, nil).op("c1", "acquire", "k", 1, 2, history.Fail, v(100), nil)
	two.op("c2", "tryLock", "k", 5, 7, history.Ok, nil, nil).op("c2", "acquire", "k", 5, 6, history.Ok, nil, nil)
	two.op("c3", "tryLock", "k", 20, 42, history.Ok, nil, nil).op("c3", "acquire", "k", 20, 21, history.Fail, v(100), nil).
		op("c3", "acquire", "k", 40, 41, history.Ok, nil, nil)
	two.op("c4", "tryLock", "k", 30, 33, history.Ok, nil, nil).op("c4", "acquire", "k", 30, 32, history.Ok, nil, nil)
	expect(t, Fairness{}, &two.h, Invalid, "c1 queued for k")
}

// A thread keeps its place in the queue until a grant or a dequeue that surely applied: a dequeue lost in a
// partition (unknown) leaves the first call's place, and the thread's next call is granted from it, ahead
// of a waiter that queued later (the false alarm of a partition,kill run of the fair lock, seed 1). With the
// dequeue applied the place is gone, and the same grant overtakes.
func TestFairnessKeepsAPlaceThatWasNotSurelyLeft(t *testing.T) {
	for _, tc := range []struct {
		dequeue history.Type
		want    Validity
		says    string
	}{
		{history.Unknown, Valid, "arrival order"},
		{history.Ok, Invalid, "c2 queued for k"},
	} {
		h := &hb{}
		h.op("c1", "tryLock", "k", 0, 11, history.Fail, nil, nil).op("c1", "acquire", "k", 1, 2, history.Fail, v(100), nil).
			op("c1", "dequeue", "k", 9, 11, tc.dequeue, nil, nil)
		h.op("c2", "tryLock", "k", 3, 30, history.Ok, nil, nil).op("c2", "acquire", "k", 3, 4, history.Fail, v(100), nil).
			op("c2", "acquire", "k", 20, 21, history.Ok, nil, nil)
		h.op("c1", "tryLock", "k", 12, 14, history.Ok, nil, nil).op("c1", "acquire", "k", 12, 13, history.Ok, nil, nil)
		expect(t, Fairness{}, &h.h, tc.want, tc.says)
	}
}

func TestGroup(t *testing.T) {
	ok := &hb{}
	ok.op("c1", "tryLock", "a,b", 0, 10, history.Ok, nil, nil).op("c1", "acquire", "a", 1, 2, history.Ok, nil, nil).
		op("c1", "acquire", "b", 3, 4, history.Ok, nil, nil)
	ok.op("c2", "tryLock", "a,b", 0, 10, history.Fail, nil, nil).op("c2", "acquire", "a", 5, 6, history.Ok, nil, nil).
		op("c2", "acquire", "b", 6, 7, history.Fail, v(100), nil).op("c2", "release", "a", 8, 9, history.Ok, v(1), nil)
	expect(t, Group{}, &ok.h, Valid, "all or nothing")
	partial := &hb{}
	partial.op("c2", "tryLock", "a,b", 0, 10, history.Fail, nil, nil).op("c2", "acquire", "a", 5, 6, history.Ok, nil, nil).
		op("c2", "acquire", "b", 6, 7, history.Fail, v(100), nil)
	expect(t, Group{}, &partial.h, Invalid, "holding only {a}")
	short := &hb{}
	short.op("c1", "tryLock", "a,b", 0, 10, history.Ok, nil, nil).op("c1", "acquire", "a", 1, 2, history.Ok, nil, nil)
	expect(t, Group{}, &short.h, Invalid, "returned true")
}

// A worker's semaphore calls (lcp_*) are judged at rest the same way.
func TestQuiescenceOfWorkerCalls(t *testing.T) {
	rest := (&hb{}).op("c1", "lcp_acquire_permits", "k", 0, 1, history.Ok, v(1), nil).
		op("c1", "lcp_available", "k", 5, 6, history.Ok, v(2), nil)
	expect(t, Quiescence{Permits: 2}, &rest.h, Valid, "at rest")
	lost := (&hb{}).op("c1", "lcp_available", "k", 5, 6, history.Ok, v(1), nil)
	expect(t, Quiescence{Permits: 2}, &lost.h, Invalid, "1 available at rest")
	unsure := (&hb{}).op("c1", "lcp_release_permit", "k", 0, 1, history.Unknown, nil, nil).
		op("c1", "lcp_available", "k", 5, 6, history.Ok, v(1), nil)
	expect(t, Quiescence{Permits: 2}, &unsure.h, Unknown, "unknown outcomes")
}

func TestQuiescenceAndLatch(t *testing.T) {
	rest := (&hb{}).op("z", "available", "k", 0, 1, history.Ok, v(2), nil)
	expect(t, Quiescence{Permits: 2}, &rest.h, Valid, "at rest")
	lost := (&hb{}).op("z", "available", "k", 0, 1, history.Ok, v(3), nil)
	expect(t, Quiescence{Permits: 2}, &lost.h, Invalid, "3 available at rest")
	// A release still pending may have landed: it explains the third permit, not a fourth.
	lost.op("c1", "release", "k", 0, -1, history.Unknown, nil, nil)
	lost.h.Ops[len(lost.h.Ops)-1].Complete = nil
	expect(t, Quiescence{Permits: 2}, &lost.h, Valid, "1 of uncertain outcome")
	four := (&hb{}).op("c1", "release", "k", 0, 1, history.Unknown, nil, nil).op("z", "available", "k", 5, 6, history.Ok, v(4), nil)
	expect(t, Quiescence{Permits: 2}, &four.h, Invalid, "between 2 and 3")

	early := &hb{}
	early.op("c1", "setCount", "l", 0, 1, history.Ok, v(1), map[string]int64{"count": 2}).
		op("c2", "countDown", "l", 2, 3, history.Ok, v(1), nil).op("c3", "await", "l", 2, 4, history.Ok, nil, nil)
	expect(t, LatchAwaits{}, &early.h, Invalid, "after only 1 of 2 countDowns")
	fine := &hb{}
	fine.op("c1", "setCount", "l", 0, 1, history.Ok, v(1), map[string]int64{"count": 2}).
		op("c2", "countDown", "l", 2, 3, history.Ok, v(1), nil).op("c4", "countDown", "l", 3, 4, history.Ok, v(0), nil).
		op("c3", "await", "l", 2, 5, history.Ok, nil, nil)
	expect(t, LatchAwaits{}, &fine.h, Valid, "none open")
	neg := &hb{}
	neg.op("c1", "setCount", "l", 0, 1, history.Ok, v(1), map[string]int64{"count": 1}).
		op("c2", "countDown", "l", 2, 3, history.Ok, v(-1), nil)
	expect(t, LatchAwaits{}, &neg.h, Invalid, "took the count to -1")
}

func TestExclusionModes(t *testing.T) {
	s := func(client, mode string, enter, exit int64) history.Record {
		r := sec(client, "k", enter, exit)
		r.F = mode
		return r
	}
	readers := []history.Record{s("c1", "read", 0, 10), s("c2", "read", 5, 15)}
	expect(t, Exclusion{}, &history.History{Sections: readers}, Valid, "none overlapping")
	rw := []history.Record{s("c1", "read", 0, 10), s("c2", "write", 5, 15)}
	expect(t, Exclusion{}, &history.History{Sections: rw}, Invalid, "c2 entered")
	// Two permits: three at once is too many, two is fine.
	permits := []history.Record{s("c1", "permit", 0, 10), s("c2", "permit", 2, 10), s("c3", "permit", 4, 10)}
	expect(t, Exclusion{Capacity: 2}, &history.History{Sections: permits}, Invalid, "3 holders of k")
	expect(t, Exclusion{Capacity: 3}, &history.History{Sections: permits}, Valid, "never more than 3")
	// A validity window ends the section before its exit: back-to-back within validity is fine.
	v1 := sec("c1", "k", 0, 100)
	v1.Until = 40
	expect(t, Exclusion{}, &history.History{Sections: []history.Record{v1, sec("c2", "k", 50, 60)}}, Valid, "none")
	// Fenced: an overlap whose older writer was refused is a caught overrun, not a violation.
	old, young := sec("c1", "k", 0, 100), sec("c2", "k", 50, 60)
	old.Token, young.Token, old.Rejected = 1, 2, true
	expect(t, Exclusion{Fenced: true}, &history.History{Sections: []history.Record{old, young}}, Valid, "fencing held")
	old.Rejected = false
	expect(t, Exclusion{Fenced: true}, &history.History{Sections: []history.Record{old, young}}, Invalid, "c2 entered")
}

// A real worker's latch calls are lcp_set_count and lcp_count_down (its count_down answers no count): the
// checker reads them as the emulation's, so an await that opened early is caught there too (it was blind).
func TestLatchFromWorkerCalls(t *testing.T) {
	early := &hb{}
	early.op("c1", "lcp_set_count", "l", 0, 1, history.Ok, v(1), map[string]int64{"count": 2}).
		op("c2", "lcp_count_down", "l", 2, 3, history.Ok, nil, nil).op("c3", "await", "l", 2, 4, history.Ok, nil, nil).
		op("c3", "lcp_await", "l", 2, 4, history.Ok, v(1), nil)
	expect(t, LatchAwaits{}, &early.h, Invalid, "after only 1 of 2 countDowns")
	fine := &hb{}
	fine.op("c1", "lcp_set_count", "l", 0, 1, history.Ok, v(1), map[string]int64{"count": 2}).
		op("c2", "lcp_count_down", "l", 2, 3, history.Ok, nil, nil).op("c4", "lcp_count_down", "l", 3, 4, history.Unknown, nil, nil).
		op("c3", "await", "l", 2, 5, history.Ok, nil, nil)
	expect(t, LatchAwaits{}, &fine.h, Valid, "none open")
}

// A holder whose unlock was lost (unknown) may still hold the lock, so its next call is granted as a
// re-entry, ahead of the queue, and overtakes nobody (the false alarm of a partition,kill run of the fair
// lock with AOF, seed 8: the unlock died with the killed server, which came back with the hold). Had the
// unlock answered 1, the lock was gone and the same grant overtakes the waiter; an answer of 0 leaves a
// re-entrant count, still held.
func TestFairnessReentryAfterALostUnlock(t *testing.T) {
	for _, tc := range []struct {
		release history.Type
		value   *int64
		want    Validity
		says    string
	}{
		{history.Unknown, nil, Valid, "arrival order"},
		{history.Ok, v(0), Valid, "arrival order"},
		{history.Ok, v(1), Invalid, "c2 was granted"},
	} {
		h := &hb{}
		h.op("c2", "tryLock", "k", 0, 2, history.Ok, nil, nil).op("c2", "acquire", "k", 0, 1, history.Ok, nil, nil)
		h.op("c1", "tryLock", "k", 3, 30, history.Fail, nil, nil).op("c1", "acquire", "k", 3, 4, history.Fail, v(100), nil)
		h.op("c2", "unlock", "k", 5, 6, tc.release, nil, nil).op("c2", "release", "k", 5, 6, tc.release, tc.value, nil)
		h.op("c2", "tryLock", "k", 8, 10, history.Ok, nil, nil).op("c2", "acquire", "k", 8, 9, history.Ok, nil, nil)
		expect(t, Fairness{}, &h.h, tc.want, tc.says)
	}
}

// At rest a semaphore has what its permit commands left: a holder whose release failed keeps its permit
// (the falsealarms runs under kill: every release to the dead server failed, and 0 of 2 were available),
// a grant whose reply was lost may have taken one, and an expirable permit comes back once its lease ends.
func TestQuiescenceCountsWhatTheCommandsLeft(t *testing.T) {
	one := map[string]int64{"permits": 1}
	held := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(1), one).op("c2", "acquire", "k", 0, 1, history.Ok, v(1), one).
		op("c1", "release", "k", 2, 3, history.Ok, v(1), one).op("c2", "release", "k", 2, 3, history.Fail, nil, one)
	held.op("z", "available", "k", 10, 11, history.Ok, v(1), nil)
	expect(t, Quiescence{Permits: 2}, &held.h, Valid, "0 of uncertain outcome")
	back := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(1), one).op("z", "available", "k", 10, 11, history.Ok, v(2), nil)
	expect(t, Quiescence{Permits: 2}, &back.h, Invalid, "where its permit commands leave 1")
	lostGrant := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Unknown, nil, one).op("z", "available", "k", 10, 11, history.Ok, v(1), nil)
	expect(t, Quiescence{Permits: 2}, &lostGrant.h, Valid, "1 of uncertain outcome")
	lease := map[string]int64{"lease_ms": 1}
	expired := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(1), lease).op("z", "available", "k", 2e6, 2e6+1, history.Ok, v(2), nil)
	expect(t, Quiescence{Permits: 2}, &expired.h, Valid, "at rest")
	notYet := (&hb{}).op("c1", "acquire", "k", 0, 1, history.Ok, v(1), lease).op("z", "available", "k", 5e5, 5e5+1, history.Ok, v(2), nil)
	expect(t, Quiescence{Permits: 2}, &notYet.h, Invalid, "leave 1")
}
