package checker

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// lostLockHistory builds one key's operations: each step is (client, f, call ms, return ms, outcome, value).
type step struct {
	client, f string
	call, ret int64
	typ       history.Type
	value     int64
	args      map[string]int64
}

func opsOf(steps []step) []history.Operation {
	var ops []history.Operation
	for i, s := range steps {
		args := map[string]int64{"lease_ms": 30000}
		for k, v := range s.args {
			if k != "nosync" {
				args[k] = v
			}
		}
		inv := history.Record{Type: history.Invoke, ID: int64(i + 1), Time: s.call * 1e6, Client: s.client, Thread: 1,
			Key: "lock-0", Owner: s.client + "-uuid:1", F: s.f, Args: args}
		done := inv
		done.Args = nil
		if s.args["nosync"] == 1 { // applied where no replica acknowledged it
			done.Args = map[string]int64{"nosync": 1}
		}
		v := s.value
		done.Type, done.Time, done.Value = s.typ, s.ret*1e6, &v
		if s.typ == history.Unknown {
			done.Value = nil
		}
		if s.f == "acquire" && s.typ == history.Ok {
			done.Value = nil
		}
		ops = append(ops, history.OperationOf(inv, &done))
	}
	return ops
}

func TestLostLock(t *testing.T) {
	ok, fail, unknown := history.Ok, history.Fail, history.Unknown
	tests := []struct {
		name  string
		steps []step
		want  Validity
	}{
		{"acquire then release", []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "release", 100, 101, ok, 1, nil}}, Valid},
		{"release refused within the lease", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "release", 3000, 3001, fail, -1, nil}}, Invalid},
		{"renew refused within the lease", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "renew", 3000, 3001, fail, 0, nil}}, Invalid},
		{"re-entry refused: someone else holds it", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "acquire", 50, 51, fail, 29000, nil}}, Invalid},
		{"refused after the lease could end", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "release", 31000, 31001, fail, -1, nil}}, Valid},
		{"a renewal extends the lease", []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "renew", 20000, 20001, ok, 1, nil},
			{"c1", "release", 40000, 40001, fail, -1, nil}}, Invalid},
		// Explore's fenced lock (30 minutes): a watchdog hold re-entered with 100 ms; the inner unlock set
		// the lock's TTL to that (Redisson's internalLockLeaseTime), and the outer release after it was
		// refused. A renewal in flight beside the re-entry no longer counts as extending past it.
		{"an inner unlock sets a shorter lease", []step{{"c1", "acquire", 0, 1, ok, 0, map[string]int64{"lease_ms": 1500}},
			{"c1", "renew", 400, 900, ok, 1, map[string]int64{"lease_ms": 1500}},
			{"c1", "acquire", 300, 900, ok, 0, map[string]int64{"lease_ms": 100}},
			{"c1", "release", 1050, 1051, ok, 0, map[string]int64{"lease_ms": 100}},
			{"c1", "release", 1250, 1251, fail, -1, nil}}, Valid},
		{"renewed after the inner unlock", []step{{"c1", "acquire", 0, 1, ok, 0, map[string]int64{"lease_ms": 1500}},
			{"c1", "acquire", 300, 900, ok, 0, map[string]int64{"lease_ms": 100}},
			{"c1", "release", 1050, 1051, ok, 0, map[string]int64{"lease_ms": 100}},
			{"c1", "renew", 1100, 1101, ok, 1, map[string]int64{"lease_ms": 1500}},
			{"c1", "release", 1250, 1251, fail, -1, nil}}, Invalid},
		// Explore's reentrant lock (30 minutes): a watchdog hold re-entered with 10 s and let go; the
		// watchdog's renewals (600 ms) set the TTL afresh each time, then the client stalled for 1 s and its
		// next renewal was refused. The 10 s had been cut by the renewals.
		{"renewals cut a re-entry's longer lease", []step{{"c1", "acquire", 0, 1, ok, 0, map[string]int64{"lease_ms": 600}},
			{"c1", "acquire", 102, 103, ok, 0, map[string]int64{"lease_ms": 10000}},
			{"c1", "renew", 201, 202, ok, 1, map[string]int64{"lease_ms": 600}},
			{"c1", "release", 302, 303, ok, 0, map[string]int64{"lease_ms": 10000}},
			{"c1", "renew", 402, 403, ok, 1, map[string]int64{"lease_ms": 600}},
			{"c1", "renew", 2611, 2612, ok, 1, map[string]int64{"lease_ms": 600}},
			{"c1", "renew", 3626, 3627, fail, 0, map[string]int64{"lease_ms": 600}}}, Valid},
		{"a renewal refused inside the renewed lease", []step{{"c1", "acquire", 0, 1, ok, 0, map[string]int64{"lease_ms": 600}},
			{"c1", "acquire", 102, 103, ok, 0, map[string]int64{"lease_ms": 10000}},
			{"c1", "renew", 2611, 2612, ok, 1, map[string]int64{"lease_ms": 600}},
			{"c1", "renew", 2811, 2812, fail, 0, map[string]int64{"lease_ms": 600}}}, Invalid},
		{"an unknown release in between proves nothing", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "release", 100, 3100, unknown, 0, nil}, {"c1", "release", 4000, 4001, fail, -1, nil}}, Valid},
		{"an unacknowledged grant may vanish", []step{{"c1", "acquire", 0, 1, ok, 0, map[string]int64{"nosync": 1}},
			{"c1", "release", 3000, 3001, fail, -1, nil}}, Valid},
		{"a replayed unlock proves nothing", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "release", 3000, 3001, fail, -1, map[string]int64{"attempt": 1}}}, Valid},
		{"another owner's refusal is not a loss", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c2", "release", 3000, 3001, fail, -1, nil}}, Valid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := LostLock{}.Check(context.Background(), &history.History{Ops: opsOf(tc.steps)})
			if r.Valid != tc.want {
				t.Fatalf("got %v: %s %s", r.Valid, r.Summary, r.Violation)
			}
			if r.Valid == Invalid && !strings.Contains(r.Violation, "the server lost") {
				t.Fatalf("violation not explained: %s", r.Violation)
			}
		})
	}
}

// Issue #29 item 10: the explanation says what the history shows removed the key (another owner's command,
// the holder's own, or nothing recorded: the server), not "the server lost the lock" whatever came between.
func TestLostLockSaysWhatRemovedTheKey(t *testing.T) {
	ok, fail := history.Ok, history.Fail
	tests := []struct {
		name  string
		steps []step
		by    GoneBy
		says  string
	}{
		{"nothing between: the server", []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "release", 3000, 3001, fail, -1, nil}},
			GoneServer, "the server lost the lock"},
		{"the holder's own renew", []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "renew", 1000, 1001, ok, 1, nil},
			{"c1", "release", 3000, 3001, fail, -1, nil}}, GoneOwn, "holder's own renew, called at 1.000s"},
		{"another owner's DEL (the naive control)", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c2", "release", 1000, 1001, ok, 1, nil}, {"c1", "release", 3000, 3001, fail, -1, nil}},
			GoneOther, "c2/1's release, called at 1.000s"},
		// The runs' end: every thread releases at once; c2's DEL, called after c1's release but in flight
		// with it, may have run first on the server.
		{"another owner's DEL in flight with the refused release", []step{{"c1", "acquire", 0, 1, ok, 0, nil},
			{"c1", "release", 3000, 3010, fail, -1, nil}, {"c2", "release", 3005, 3012, ok, 1, nil}},
			GoneOther, "c2/1's release, called at 3.005s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := LostLock{}.Check(context.Background(), &history.History{Ops: opsOf(tc.steps)})
			if r.Valid != Invalid || !strings.Contains(r.Violation, tc.says) {
				t.Fatalf("got %v, want invalid saying %q: %s", r.Valid, tc.says, r.Violation)
			}
			if tc.by != GoneServer && strings.Contains(r.Violation, "the server lost the lock") {
				t.Fatalf("blames the server though %s came between: %s", tc.by, r.Violation)
			}
			if ls := r.Details.([]Loss); ls[0].Gone.By != tc.by {
				t.Fatalf("gone by %q, want %q", ls[0].Gone.By, tc.by)
			}
		})
	}
}

// An unknown outcome is bounded by when the client gave up (plus slack), or by the end of a node pause that
// overlaps it; on an external deployment it stays unbounded.
func TestUnknownDeadline(t *testing.T) {
	meta := func(backend string) *history.RunMeta {
		m, err := history.DecodeMeta([]byte(`{"options":{"backend":"` + backend + `","latency":"200ms","jitter":"50ms"}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	s := int64(1e9)
	h := &history.History{Run: meta("process")}
	if got := unknownDeadline(h)(0, 3*s); got != 3*s+s+250*int64(time.Millisecond) {
		t.Fatalf("bound %d", got)
	}
	h.Faults = []history.Record{{Type: history.Fault, F: "pause", Phase: "start", Time: 2 * s},
		{Type: history.Fault, F: "pause", Phase: "stop", Time: 10 * s}}
	if got := unknownDeadline(h)(s, 3*s); got < 10*s {
		t.Fatalf("a paused server can run the command at resume (10s), bound %d", got)
	}
	if got := unknownDeadline(&history.History{Run: meta("external")})(0, 3*s); got != math.MaxInt64 {
		t.Fatalf("external: bound %d, want none", got)
	}
}

// The watchdog renews concurrently with the owner's own release: a renewal answered "not held" after a
// release that overlaps it proves nothing.
func TestLostLockConcurrentRelease(t *testing.T) {
	ok, fail := history.Ok, history.Fail
	steps := []step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c1", "renew", 100, 190, fail, 0, nil},
		{"c1", "release", 110, 120, ok, 1, nil}}
	if r := (LostLock{}).Check(context.Background(), &history.History{Ops: opsOf(steps)}); r.Valid != Valid {
		t.Fatalf("got %v: %s", r.Valid, r.Violation)
	}
}

// A command sent to a killed server after its exit and given up before its restart began never ran; one
// sent before the kill, or still pending at the restart, may have; on Sentinel a record does not name the
// server the command reached, and a history without the restart's step keeps every unknown.
func TestDownNodes(t *testing.T) {
	s := int64(1e9)
	meta := func(topology, backend string) *history.RunMeta {
		m, err := history.DecodeMeta([]byte(`{"topology":"` + topology + `","options":{"backend":"` + backend + `"}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	kill := func(phase string, at int64, nodes ...string) history.Record {
		return history.Record{Type: history.Fault, F: "kill", Phase: phase, Targets: nodes, Time: at}
	}
	faults := []history.Record{kill("start", 1*s, "n2"), kill("step", 2*s, "n2"), kill("stop", 3*s, "n2")}
	h := &history.History{Run: meta("redlock", "process"), Faults: faults}
	down := downNodes(h)
	for _, tc := range []struct {
		node         string
		call, gaveUp int64
		want         bool
	}{
		{"n2", 1 * s, 1*s + s/10, true},        // after the exit, given up at once
		{"n2", 1*s + s/2, 2*s - 1, true},       // given up just before the restart began
		{"n2", s - 1, 1*s + s/10, false},       // sent before the kill: may have run
		{"n2", 1*s + s/2, 2 * s, false},        // still pending as the restart began
		{"n1", 1*s + s/2, 1*s + s/10*6, false}, // another master
	} {
		if got := down(tc.node, tc.call, tc.gaveUp); got != tc.want {
			t.Errorf("%s called %d gave up %d: down %v, want %v", tc.node, tc.call, tc.gaveUp, got, tc.want)
		}
	}
	// Two nodes killed at once restart one after the other, each marked by its own step.
	both := &history.History{Run: meta("single", "process"), Faults: []history.Record{kill("start", 1*s, "n1", "n2"),
		kill("step", 2*s, "n1"), kill("step", 3*s, "n2"), kill("stop", 4*s, "n1", "n2")}}
	if d := downNodes(both); d("n1", 1*s, 2*s+s/2) || !d("n2", 1*s, 2*s+s/2) {
		t.Errorf("two nodes: n1 (restarting at 2 s) down at 2.5 s: %v, n2 (at 3 s): %v", d("n1", 1*s, 2*s+s/2), d("n2", 1*s, 2*s+s/2))
	}
	// The restarted server answering again is a later step: a command given up before it never ran.
	ready := &history.History{Run: meta("single", "process"), Faults: []history.Record{kill("start", 1*s, "n2"),
		kill("step", 2*s, "n2"), kill("step", 3*s, "n2"), kill("stop", 3*s+1, "n2")}}
	if d := downNodes(ready); !d("n2", 1*s, 3*s-1) || d("n2", 1*s, 3*s) || d("n2", 3*s, 3*s+s/10) {
		t.Errorf("restart at 2 s, answering at 3 s: given up at 3 s - 1 ns: %v (want true), at 3 s: %v, sent at 3 s: %v",
			d("n2", 1*s, 3*s-1), d("n2", 1*s, 3*s), d("n2", 3*s, 3*s+s/10))
	}
	for name, h := range map[string]*history.History{
		"sentinel":   {Run: meta("sentinel", "process"), Faults: faults},
		"external":   {Run: meta("single", "external"), Faults: faults},
		"no restart": {Run: meta("single", "process"), Faults: []history.Record{kill("start", 1*s, "n2"), kill("stop", 3*s, "n2")}},
	} {
		if downNodes(h)("n2", 1*s, 1*s+s/10) {
			t.Errorf("%s: a command to the killed node was taken as never run", name)
		}
	}
}
