package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// liveCall is one application call on lock-0: client, f (tryLock or unlock), invoke and completion in ms,
// the completion's type, and for a watchdog lock lease 0.
type liveCall struct {
	client    string
	f         string
	inv, done int64
	typ       history.Type
	lease     int64
}

// liveHistory writes a history file's lines (meta with --timeout 1s --watchdog 1500ms, the calls, the
// faults given as raw fault records) and reads it as lockcheck would.
func liveHistory(t *testing.T, calls []liveCall, faults ...string) *history.History {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"meta","time":1,"data":{"lock":"fair","options":{"timeout":"1s","watchdog":"1500ms"},"checks":{"family":"mutex","fair":true}}}` + "\n")
	for i, c := range calls {
		fmt.Fprintf(&b, `{"type":"invoke","time":%d,"id":%d,"client":"%s","thread":1,"key":"lock-0","owner":"%s:1","f":"%s","args":{"lease_ms":%d,"nested":0,"wait_ms":30000}}`+"\n",
			c.inv*1e6, i+1, c.client, c.client, c.f, c.lease)
	}
	for i, c := range calls { // completions after every invoke: the reader pairs them by id
		fmt.Fprintf(&b, `{"type":"%s","time":%d,"id":%d,"client":"%s","thread":1,"key":"lock-0","owner":"%s:1","f":"%s"}`+"\n",
			c.typ, c.done*1e6, i+1, c.client, c.client, c.f)
	}
	for _, f := range faults {
		b.WriteString(f + "\n")
	}
	b.WriteString(`{"type":"end","time":40000000000,"f":"completed"}` + "\n")
	h, err := history.Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// pauseOf is an armed client-pause of client c: armed and frozen at ms from, stopped at ms to.
func pauseOf(c string, from, to int64) []string {
	return []string{
		fmt.Sprintf(`{"type":"fault","time":%d,"client":"nemesis","f":"client-pause","phase":"start","targets":["%s"],"detail":"armed: the client freezes at its next grant"}`, from*1e6, c),
		fmt.Sprintf(`{"type":"fault","time":%d,"client":"nemesis","f":"client-pause","phase":"frozen","targets":["%s"],"detail":"frozen inside its critical section"}`, from*1e6+1, c),
		fmt.Sprintf(`{"type":"fault","time":%d,"client":"nemesis","f":"client-pause","phase":"stop","targets":["%s"]}`, to*1e6, c),
	}
}

// Redisson #3004 as the application sees it: c2 is granted a watchdog lock at 7 s and freezes there until
// 15 s, so its lease (1.5 s) runs out by 7 + 1 (a renewal in flight) + 1.5 s; c1, waiting since 6.9 s, is
// granted only when c2 wakes and unlocks at 15.3 s, far past the lease plus ε (1.5 + 2 s) after 9.5 s.
func TestSlowWakeupInvalid(t *testing.T) {
	h := liveHistory(t, []liveCall{
		{"c2", "tryLock", 6600, 7000, history.Ok, 0},
		{"c1", "tryLock", 6900, 15300, history.Ok, 0},
		{"c2", "unlock", 15200, 15250, history.Ok, 0},
		{"c1", "unlock", 15400, 15450, history.Ok, 0},
	}, pauseOf("c2", 7000, 15200)...)
	r := SlowWakeup{}.Check(context.Background(), h)
	if r.Valid != Invalid {
		t.Fatalf("want invalid, got %v: %s", r.Valid, r.Summary)
	}
	for _, want := range []string{"c1", "froze at 7.000s", "waiting since 6.900s", "the next grant went to c1 at 15.300s"} {
		if !strings.Contains(r.Violation, want) {
			t.Errorf("violation %q does not say %q", r.Violation, want)
		}
	}
	if r.At != 9517000001 || r.End != 15300000000 { // frozen at 7 s + 1 ns, + 1 s + 1.5 s + ε(1.5 s) = 17 ms
		t.Errorf("violation spans %d..%d, want the free moment 9.517 s to the grant 15.3 s", r.At, r.End)
	}
}

// The fixed version: the waiter retries when the frozen holder's lease runs out and is granted at 9.6 s.
// A pause shorter than the timeout plus the lease proves no expiry at all (the watchdog resumes in time).
func TestSlowWakeupValid(t *testing.T) {
	h := liveHistory(t, []liveCall{
		{"c2", "tryLock", 6600, 7000, history.Ok, 0},
		{"c1", "tryLock", 6900, 9600, history.Ok, 0},
		{"c1", "unlock", 9800, 9850, history.Ok, 0},
		{"c2", "unlock", 15200, 15250, history.Fail, 0},
		{"c3", "tryLock", 20000, 20100, history.Ok, 0},
		{"c1", "tryLock", 20050, 22400, history.Ok, 0}, // c3 holds: c1 waits, legitimately
		{"c3", "unlock", 22300, 22350, history.Ok, 0},
	}, append(pauseOf("c2", 7000, 15200), pauseOf("c3", 20100, 22200)...)...)
	if r := (SlowWakeup{}).Check(context.Background(), h); r.Valid != Valid {
		t.Fatalf("want valid, got %v: %s %s", r.Valid, r.Summary, r.Violation)
	}
}

// A slow waiter while a node was down says nothing decisive: unknown, not invalid.
func TestSlowWakeupUnknownUnderFault(t *testing.T) {
	h := liveHistory(t, []liveCall{
		{"c2", "tryLock", 6600, 7000, history.Ok, 0},
		{"c1", "tryLock", 6900, 15300, history.Ok, 0},
		{"c2", "unlock", 7100, 7150, history.Ok, 0},
	},
		`{"type":"fault","time":7200000000,"client":"nemesis","f":"pause","phase":"start","targets":["n1"]}`,
		`{"type":"fault","time":15000000000,"client":"nemesis","f":"pause","phase":"stop","targets":["n1"]}`)
	if r := (SlowWakeup{}).Check(context.Background(), h); r.Valid != Unknown {
		t.Fatalf("want unknown, got %v: %s %s", r.Valid, r.Summary, r.Violation)
	}
}

// After the last heal (10 s) the lock is free and c1 and c3 keep trying, one attempt after another, but
// nobody is granted until 25 s: longer than the longest lease (2 s; Fair is off, so the waits do not
// count) plus ε (2 × 1 s).
func TestStarvationInvalid(t *testing.T) {
	calls := []liveCall{
		{"c2", "tryLock", 1000, 1100, history.Ok, 2000},
		{"c2", "unlock", 1200, 1300, history.Ok, 2000},
	}
	for at := int64(10500); at < 23000; at += 2000 {
		calls = append(calls, liveCall{"c1", "tryLock", at, at + 2000, history.Fail, 2000},
			liveCall{"c3", "tryLock", at + 500, at + 1900, history.Fail, 2000})
	}
	calls = append(calls, liveCall{"c1", "tryLock", 24600, 25000, history.Ok, 2000})
	h := liveHistory(t, calls,
		`{"type":"fault","time":5000000000,"client":"nemesis","f":"partition","phase":"start","targets":["n1"]}`,
		`{"type":"fault","time":10000000000,"client":"nemesis","f":"partition","phase":"stop","targets":["n1"]}`)
	r := Starvation{}.Check(context.Background(), h)
	if r.Valid != Invalid {
		t.Fatalf("want invalid, got %v: %s", r.Valid, r.Summary)
	}
	for _, want := range []string{"free from 10.000s", "c1, c3", "until 25.000s"} {
		if !strings.Contains(r.Violation, want) {
			t.Errorf("violation %q does not say %q", r.Violation, want)
		}
	}
}

// Granted again within the bound after the heal, and a long legitimate hold (the holder unlocks at 20 s)
// while others try: valid.
func TestStarvationValid(t *testing.T) {
	calls := []liveCall{
		{"c2", "tryLock", 10500, 11000, history.Ok, 0},
		{"c2", "unlock", 20000, 20100, history.Ok, 0},
	}
	for at := int64(10600); at < 20000; at += 2000 {
		calls = append(calls, liveCall{"c1", "tryLock", at, at + 2000, history.Fail, 2000})
	}
	calls = append(calls, liveCall{"c1", "tryLock", 20200, 20300, history.Ok, 2000})
	h := liveHistory(t, calls,
		`{"type":"fault","time":5000000000,"client":"nemesis","f":"partition","phase":"start","targets":["n1"]}`,
		`{"type":"fault","time":10000000000,"client":"nemesis","f":"partition","phase":"stop","targets":["n1"]}`)
	if r := (Starvation{}).Check(context.Background(), h); r.Valid != Valid {
		t.Fatalf("want valid, got %v: %s %s", r.Valid, r.Summary, r.Violation)
	}
}

// The holder "froze" but its renewals still reached the server (a worker frozen only at the gate, as the
// driver did before it stopped the process there): no expiry is proven, and the long wait is legitimate.
func TestSlowWakeupRenewalsOutlivePause(t *testing.T) {
	extra := pauseOf("c2", 7000, 15200)
	for i, at := int64(0), int64(7500); at < 15200; i, at = i+1, at+500 {
		extra = append(extra,
			fmt.Sprintf(`{"type":"invoke","time":%d,"id":%d,"client":"c2","key":"lock-0","node":"n1","owner":"u:61","src":"wire","f":"renew","args":{"lease_ms":1500}}`, at*1e6, 1000+i),
			fmt.Sprintf(`{"type":"ok","time":%d,"id":%d,"client":"c2","key":"lock-0","node":"n1","owner":"u:61","f":"renew","value":1}`, at*1e6+1e6, 1000+i))
	}
	h := liveHistory(t, []liveCall{
		{"c2", "tryLock", 6600, 7000, history.Ok, 0},
		{"c1", "tryLock", 6900, 15300, history.Ok, 0},
		{"c2", "unlock", 15200, 15250, history.Ok, 0},
	}, extra...)
	if r := (SlowWakeup{}).Check(context.Background(), h); r.Valid != Valid {
		t.Fatalf("want valid, got %v: %s %s", r.Valid, r.Summary, r.Violation)
	}
}

// client-stall at an unlock: c2 leaves its critical section and freezes as its unlock begins (2 s), still
// holding; its lease runs out by 2 + 1 + 1.5 s. c1 (waiting since 1.5 s) is granted only when c2 resumes
// at 12 s: invalid. Had c1 been granted at 4.6 s, it would be valid.
func TestSlowWakeupAfterStall(t *testing.T) {
	stall := []string{
		`{"type":"fault","time":2000000000,"client":"nemesis","f":"client-stall","phase":"start","targets":["c2"],"detail":"frozen"}`,
		`{"type":"fault","time":12000000000,"client":"nemesis","f":"client-stall","phase":"stop","targets":["c2"]}`,
	}
	for _, c := range []struct {
		granted int64
		want    Validity
	}{{12100, Invalid}, {4600, Valid}} {
		h := liveHistory(t, []liveCall{
			{"c2", "tryLock", 1000, 1100, history.Ok, 0},
			{"c1", "tryLock", 1500, c.granted, history.Ok, 0},
			{"c2", "unlock", 2000, 12050, history.Fail, 0},
		}, stall...)
		if r := (SlowWakeup{}).Check(context.Background(), h); r.Valid != c.want {
			t.Errorf("granted at %d ms: want %v, got %v: %s %s", c.granted, c.want, r.Valid, r.Summary, r.Violation)
		}
	}
}

// renewRecord is an applied (value 1) or refused (0) wire renewal of lock-0 by client c at ms.
func renewRecord(c string, id, ms, value int64) []string {
	return []string{
		fmt.Sprintf(`{"type":"invoke","time":%d,"id":%d,"client":"%s","key":"lock-0","node":"n1","owner":"u-%s:61","src":"wire","f":"renew","args":{"lease_ms":1500}}`, ms*1e6, id, c, c),
		fmt.Sprintf(`{"type":"ok","time":%d,"id":%d,"client":"%s","key":"lock-0","node":"n1","owner":"u-%s:61","f":"renew","value":%d}`, ms*1e6+1e6, id, c, c, value),
	}
}

// Redisson #7272 as the history shows it: c2 released lock-0 at 2.05 s and asked for nothing since, yet
// its watchdog's renewal at 3 s found its hold still there: invalid. Renewals that find nothing (0), or
// that come while c2 holds it again, are what a healthy watchdog does: valid.
func TestKeptAlive(t *testing.T) {
	calls := []liveCall{
		{"c2", "tryLock", 1000, 1100, history.Ok, 0},
		{"c2", "unlock", 2000, 2050, history.Ok, 0},
		{"c2", "tryLock", 5000, 5100, history.Ok, 0},
		{"c2", "unlock", 6000, 6050, history.Ok, 0},
	}
	var bad, good []string
	bad = append(renewRecord("c2", 900, 1500, 1), renewRecord("c2", 901, 3000, 1)...)
	good = append(append(renewRecord("c2", 900, 1500, 1), renewRecord("c2", 901, 3000, 0)...), renewRecord("c2", 902, 5500, 1)...)
	r := KeptAlive{}.Check(context.Background(), liveHistory(t, calls, bad...))
	if r.Valid != Invalid || !strings.Contains(r.Violation, "c2 fully released lock-0 at 2.050s") || r.At != 2050000000 || r.End != 3000000000 {
		t.Fatalf("want invalid from 2.05 s to 3 s, got %v: %s", r.Valid, r.Violation)
	}
	if r := (KeptAlive{}).Check(context.Background(), liveHistory(t, calls, good...)); r.Valid != Valid {
		t.Fatalf("want valid, got %v: %s", r.Valid, r.Violation)
	}
	// An unknown tryLock may have taken the lock back unseen: undecided.
	calls[2].typ = history.Unknown
	if r := (KeptAlive{}).Check(context.Background(), liveHistory(t, calls[:3], renewRecord("c2", 901, 5500, 1)...)); r.Valid != Unknown {
		t.Fatalf("want unknown, got %v: %s", r.Valid, r.Violation)
	}
}
