package coverage

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

const ms = int64(time.Millisecond)

// hb builds a history from records, as the reader reads a file: a meta record naming the family first.
type hb struct {
	t    *testing.T
	recs []history.Record
	id   int64
}

func newHB(t *testing.T, checks history.Checks) *hb {
	data, err := json.Marshal(history.RunMeta{Lock: "reentrant", Topology: "single", Checks: checks})
	if err != nil {
		t.Fatal(err)
	}
	return &hb{t: t, recs: []history.Record{{Type: history.Meta, Data: data}}}
}

// op records an operation by client/thread 1 on lock-0 called at call and done at done (ms), with its
// completion type and value (nil: none); done < 0 leaves it without a completion.
func (b *hb) op(client, f string, call, done int64, typ history.Type, value *int64, args map[string]int64) {
	b.id++
	inv := history.Record{Type: history.Invoke, Time: call * ms, ID: b.id, Client: client, Thread: 1, Key: "lock-0",
		Owner: client + "-uuid:1", F: f, Args: args}
	b.recs = append(b.recs, inv)
	if done >= 0 {
		c := inv
		c.Type, c.Time, c.Args, c.Value = typ, done*ms, nil, value
		b.recs = append(b.recs, c)
	}
}

func (b *hb) fault(kind, phase string, at int64) {
	b.recs = append(b.recs, history.Record{Type: history.Fault, Time: at * ms, Client: "nemesis", F: kind, Phase: phase,
		Targets: []string{"n1"}})
}

func (b *hb) history() *history.History {
	var buf bytes.Buffer
	slices.SortStableFunc(b.recs[1:], func(x, y history.Record) int { return int(x.Time - y.Time) })
	for _, r := range b.recs {
		line, err := json.Marshal(r)
		if err != nil {
			b.t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	h, err := history.Read(&buf)
	if err != nil {
		b.t.Fatal(err)
	}
	return h
}

func lease(l int64) map[string]int64 { return map[string]int64{"lease_ms": l} }

// A re-entry with a lease shorter than what its hold has left, while another owner's tryLock waits: the
// shape of Redisson's re-entry that shrinks the whole lock's lease.
func TestReentryShorterLeaseWhileWaiting(t *testing.T) {
	b := newHB(t, history.Checks{Family: "mutex"})
	b.op("c1", "acquire", 0, 5, history.Ok, nil, lease(10000))
	b.op("c2", "tryLock", 100, 1500, history.Ok, nil, map[string]int64{"lease_ms": 2000, "wait_ms": 5000})
	b.op("c2", "acquire", 100, 105, history.Fail, history.Int64(9900), lease(2000))
	b.op("c1", "acquire", 200, 205, history.Ok, nil, lease(500))
	b.op("c2", "acquire", 1400, 1405, history.Ok, nil, lease(2000))
	m := Of(b.history())
	want := Transition{Family: "mutex", Before: HeldOnce, Op: Reenter, Outcome: Granted, Lease: Shorter, Waiting: true}
	if !m.Has(want) {
		t.Fatalf("no %s in:\n%s", want, dump(m))
	}
	if s := want.String(); s != "mutex held-once reenter granted lease=shorter waiting" {
		t.Errorf("String() = %q", s)
	}
	// c2's grant after the re-entry's short lease ran out: the lock lapsed under its owner.
	lapsed := Transition{Family: "mutex", Before: Lapsed, Op: Acquire, Outcome: Granted, Lease: None}
	if !m.Has(lapsed) {
		t.Errorf("no %s in:\n%s", lapsed, dump(m))
	}
	// c2's first try, refused: its 2 s lease against the 10 s c1's hold had left.
	refused := Transition{Family: "mutex", Before: HeldOnce, Op: Acquire, Outcome: Refused, Lease: Shorter}
	if !m.Has(refused) {
		t.Errorf("no %s in:\n%s", refused, dump(m))
	}
}

// The fault in force and the wire's script and reply are part of the transition; an unlock resent after
// a lost reply shows as resent, and one the latch answered for a hold already gone as replayed.
func TestFaultScriptAndResend(t *testing.T) {
	b := newHB(t, history.Checks{Family: "mutex"})
	b.recs = append(b.recs, history.Record{Type: history.Event, Time: 0, Client: history.WireClient, F: history.WireComplete})
	wire := func(f string, call, done int64, typ history.Type, v *int64, args map[string]int64) {
		b.op("c1", f, call, done, typ, v, args)
		for i := len(b.recs) - 1; i >= 0 && b.recs[i].ID == b.id; i-- {
			b.recs[i].Src = history.WireSrc
		}
	}
	wire("acquire", 0, 5, history.Ok, nil, lease(10000))
	b.fault("drop-reply", "start", 50)
	wire("release", 100, 3100, history.Unknown, nil, map[string]int64{"lease_ms": 30000, "attempt": 0})
	b.fault("drop-reply", "stop", 3000)
	wire("release", 3200, 3205, history.Ok, history.Int64(1), map[string]int64{"lease_ms": 30000, "attempt": 1})
	m := Of(b.history())
	for _, want := range []Transition{
		{Family: "mutex", Before: Free, Op: Acquire, Outcome: Granted, Lease: None, Script: "acquire→nil"},
		{Family: "mutex", Before: HeldOnce, Op: Release, Outcome: Unknown, Lease: None, Fault: "drop-reply", Script: "release→lost"},
		{Family: "mutex", Before: HeldOnce, Op: Release, Outcome: "resent-2:" + Released, Lease: None, Script: "release→1"},
	} {
		if !m.Has(want) {
			t.Errorf("no %s in:\n%s", want, dump(m))
		}
	}
}

// Of is deterministic: the same history gives the same map, to the byte.
func TestOfDeterministic(t *testing.T) {
	h := corpusHistory(t, "rwlock-partition-drop-reply")
	a, err := json.Marshal(Of(h))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, _ := json.Marshal(Of(h))
		if !bytes.Equal(a, b) {
			t.Fatalf("two maps of one history differ:\n%s\n%s", a, b)
		}
	}
	var back Map
	if err := json.Unmarshal(a, &back); err != nil {
		t.Fatal(err)
	}
	if c, _ := json.Marshal(&back); !bytes.Equal(a, c) {
		t.Fatalf("the map does not read back as written:\n%s\n%s", a, c)
	}
	if Of(h).Len() < 10 {
		t.Errorf("a 30 s read-write run with faults covered only %d transitions", Of(h).Len())
	}
}

// Add returns only what the map had not seen, and counts the rest.
func TestAddReportsOnlyNew(t *testing.T) {
	x := Transition{Family: "mutex", Before: Free, Op: Acquire, Outcome: Granted, Lease: None}
	y := Transition{Family: "mutex", Before: HeldOnce, Op: Acquire, Outcome: Refused, Lease: Shorter, Waiting: true}
	a, b := NewMap(), NewMap()
	a.add(x, 2)
	b.add(x, 1)
	b.add(y, 3)
	added := a.Add(b)
	if len(added) != 1 || added[0] != y {
		t.Fatalf("Add = %v, want only %s", added, y)
	}
	if a.Count(x) != 3 || a.Count(y) != 3 || a.Len() != 2 {
		t.Errorf("counts after Add: %s", dump(a))
	}
	if again := a.Add(b); len(again) != 0 {
		t.Errorf("a second Add of the same map reported %v as new", again)
	}
	h := corpusHistory(t, "reentrant-client-pause")
	m := NewMap()
	first := m.Add(Of(h))
	if len(first) != m.Len() || len(m.Add(Of(h))) != 0 {
		t.Errorf("a run's map added to an empty map: %d new of %d; added again: not none", len(first), m.Len())
	}
}

// Breaking on a recorded invalid run names the grant that broke exclusion: c2's, on a lock whose
// re-entry's 500 ms lease had lapsed under c1 (examples/schedules/reentry-lease.yaml, recorded).
func TestBreakingNamesTheGrant(t *testing.T) {
	h, err := history.ReadFile("testdata/reentry-lease.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rs, v := checker.Run(context.Background(), h, checker.Exclusion{})
	if v != checker.Invalid {
		t.Fatalf("the recorded run is %v, want invalid: %+v", v, rs)
	}
	got, ok := Breaking(h, rs)
	want := Transition{Family: "mutex", Before: Lapsed, Op: Acquire, Outcome: Granted, Lease: None}
	if !ok || got != want {
		t.Fatalf("Breaking = %s, %v; want %s", got, ok, want)
	}
	// Read back from results.json, the details are plain JSON: the same answer.
	b, _ := json.Marshal(rs)
	var back []checker.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got2, _ := Breaking(h, back); got2 != want {
		t.Errorf("Breaking on results read back = %s, want %s", got2, want)
	}
	if _, ok := Breaking(h, []checker.Result{{Checker: "x", Valid: checker.Valid}}); ok {
		t.Error("Breaking found a transition in a valid run")
	}
	m := Of(h)
	reentry := Transition{Family: "mutex", Before: HeldOnce, Op: Reenter, Outcome: Granted, Lease: Shorter}
	if !m.Has(reentry) {
		t.Errorf("no %s in:\n%s", reentry, dump(m))
	}
}

// What a run reaches is mostly what the model allows; Allowed lists each family's, once each.
func TestAllowed(t *testing.T) {
	for _, f := range Families() {
		ts := Allowed(f)
		if len(ts) == 0 {
			t.Errorf("%s: nothing allowed", f)
		}
		seen := map[Transition]bool{}
		for _, x := range ts {
			if seen[x] || x.Family != f || x.Fault != "" || x.Script != "" {
				t.Errorf("%s: %s listed twice or not as a core transition of its family", f, x)
			}
			seen[x] = true
		}
	}
	if Allowed("no-such-family") != nil {
		t.Error("an unknown family allows something")
	}
	h := corpusHistory(t, "reentrant-client-pause")
	m := Of(h)
	if u := m.Unreached(FamilyOf(h)); len(u) == 0 || len(u) >= len(Allowed(FamilyOf(h))) {
		t.Errorf("unreached %d of %d allowed", len(u), len(Allowed(FamilyOf(h))))
	}
}

func corpusHistory(t *testing.T, name string) *history.History {
	t.Helper()
	es, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == name {
			h, err := e.History()
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
	}
	t.Fatalf("no corpus history %s", name)
	return nil
}

func dump(m *Map) string {
	var b strings.Builder
	for _, x := range m.Transitions() {
		b.WriteString("  " + x.String() + "\n")
	}
	return b.String()
}

// Overlapping commands are placed in an order the model allows: a grant whose reply came before the
// reply of the release it followed, and a refusal answered before a release whose reply came first.
func TestOverlapsPlacedAsTheModelAllows(t *testing.T) {
	b := newHB(t, history.Checks{Family: "mutex"})
	b.op("c1", "acquire", 0, 5, history.Ok, nil, lease(10000))
	b.op("c1", "release", 100, 300, history.Ok, history.Int64(1), lease(30000))
	b.op("c2", "acquire", 150, 200, history.Ok, nil, lease(10000))
	b.op("c3", "acquire", 90, 400, history.Fail, history.Int64(9000), lease(10000))
	m := Of(b.history())
	for _, want := range []Transition{
		{Family: "mutex", Before: HeldOnce, Op: Release, Outcome: Released, Lease: None, Waiting: true},
		{Family: "mutex", Before: Free, Op: Acquire, Outcome: Granted, Lease: None, Waiting: true},
		{Family: "mutex", Before: HeldOnce, Op: Acquire, Outcome: Refused, Lease: Equal},
	} {
		if !m.Has(want) {
			t.Errorf("no %s in:\n%s", want, dump(m))
		}
	}
	if m.Len() != 4 {
		t.Errorf("want 4 transitions (the first grant and the three above), got:\n%s", dump(m))
	}
}
