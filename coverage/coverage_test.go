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
		t.Logf("%-20s %4d transitions allowed", f, len(ts))
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

// Every family's transitions, each on a hand-built history: the state classes, the operations relative to
// the caller, and for a fair lock its queue.
func TestFamilies(t *testing.T) {
	read := func(l int64) map[string]int64 { return map[string]int64{"lease_ms": l, "read": 1} }
	n := func(k string, v int64) map[string]int64 { return map[string]int64{k: v} }
	cases := []struct {
		name   string
		checks history.Checks
		build  func(b *hb)
		want   []Transition
	}{
		{"rwlock: a second reader with a shorter lease while a writer waits, and the writer let in under the first",
			history.Checks{Family: "rwlock"}, func(b *hb) {
				b.op("c1", "acquire", 0, 5, history.Ok, nil, read(10000))
				b.op("c3", "tryLock", 50, 2000, history.Ok, nil, lease(2000))
				b.op("c3", "acquire", 50, 55, history.Fail, history.Int64(9900), lease(2000))
				b.op("c2", "acquire", 100, 105, history.Ok, nil, read(300))
				b.op("c3", "acquire", 1500, 1505, history.Ok, nil, lease(2000))
			}, []Transition{
				{Family: "rwlock", Before: Readers1, Op: ReadAcquire, Outcome: Granted, Lease: Shorter, Waiting: true},
				{Family: "rwlock", Before: Readers1, Op: WriteAcquire, Outcome: Refused, Lease: Shorter},
				{Family: "rwlock", Before: Readers1, Op: WriteAcquire, Outcome: Granted, Lease: Shorter},
			}},
		{"fair: the queue's length is the state's",
			history.Checks{Family: "mutex", Fair: true}, func(b *hb) {
				b.op("c1", "acquire", 0, 5, history.Ok, nil, lease(10000))
				b.op("c2", "tryLock", 10, 900, history.Ok, nil, lease(1000))
				b.op("c3", "tryLock", 10, 900, history.Ok, nil, lease(1000))
				b.op("c4", "acquire", 20, 25, history.Fail, history.Int64(9000), lease(10000))
				b.op("c1", "release", 100, 105, history.Ok, history.Int64(1), lease(30000))
			}, []Transition{
				{Family: "mutex/fair", Before: HeldOnce + "/queue-many", Op: Acquire, Outcome: Refused, Lease: Equal, Waiting: true},
				{Family: "mutex/fair", Before: HeldOnce + "/queue-many", Op: Release, Outcome: Released, Lease: None, Waiting: true},
			}},
		{"semaphore: permits all, some, none",
			history.Checks{Family: "semaphore", Permits: 2}, func(b *hb) {
				b.op("c1", "setPermits", 0, 5, history.Ok, nil, n("permits", 2))
				b.op("c1", "acquire", 10, 15, history.Ok, nil, n("permits", 1))
				b.op("c2", "acquire", 20, 25, history.Ok, nil, n("permits", 1))
				b.op("c3", "acquire", 30, 35, history.Fail, history.Int64(0), n("permits", 1))
				b.op("c1", "release", 40, 45, history.Ok, history.Int64(1), n("permits", 1))
			}, []Transition{
				{Family: "semaphore", Before: Unset, Op: SetPermits, Outcome: Ok, Lease: None},
				{Family: "semaphore", Before: PermitsAll, Op: Acquire, Outcome: Granted, Lease: None},
				{Family: "semaphore", Before: PermitsSome, Op: Acquire, Outcome: Granted, Lease: None},
				{Family: "semaphore", Before: Permits0, Op: Acquire, Outcome: Refused, Lease: None},
				{Family: "semaphore", Before: Permits0, Op: Release, Outcome: Ok, Lease: None},
			}},
		{"expirable semaphore: a permit's release after its lease ran out is a stray one",
			history.Checks{Family: "expirable-semaphore", Permits: 1}, func(b *hb) {
				b.op("c1", "setPermits", 0, 5, history.Ok, nil, n("permits", 1))
				b.op("c1", "acquire", 10, 15, history.Ok, nil, lease(300))
				b.op("c1", "release", 1000, 1005, history.Fail, history.Int64(0), nil)
			}, []Transition{
				{Family: "expirable-semaphore", Before: PermitsAll, Op: Acquire, Outcome: Granted, Lease: None},
				{Family: "expirable-semaphore", Before: PermitsAll, Op: StrayRelease, Outcome: Refused, Lease: None},
			}},
		{"latch: counted down to open",
			history.Checks{Family: "latch"}, func(b *hb) {
				b.op("c1", "setCount", 0, 5, history.Ok, nil, n("count", 2))
				b.op("c1", "countDown", 10, 15, history.Ok, history.Int64(1), nil)
				b.op("c2", "countDown", 20, 25, history.Ok, history.Int64(0), nil)
				b.op("c2", "getCount", 30, 35, history.Ok, history.Int64(0), nil)
			}, []Transition{
				{Family: "latch", Before: Open, Op: SetCount, Outcome: Ok, Lease: None},
				{Family: "latch", Before: CountMany, Op: CountDown, Outcome: Ok, Lease: None},
				{Family: "latch", Before: Count1, Op: CountDown, Outcome: Ok, Lease: None},
				{Family: "latch", Before: Open, Op: Read, Outcome: Ok, Lease: None},
			}},
	}
	for _, c := range cases {
		b := newHB(t, c.checks)
		c.build(b)
		m := Of(b.history())
		for _, want := range c.want {
			if !m.Has(want) {
				t.Errorf("%s: no %s in:\n%s", c.name, want, dump(m))
			}
		}
	}
}

// Breaking on porcupine's verdict names its culprit, the command no legal order places: on recorded
// invalid runs, RedLock's grant to a second owner under a clock fault, and the lying-permits worker's
// release of a lapsed permit answered "released".
func TestBreakingNamesPorcupinesCulprit(t *testing.T) {
	es, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Transition{
		"redlock-clock": {Family: "mutex/redlock", Before: HeldOnce, Op: Acquire, Outcome: Granted, Lease: Equal,
			Waiting: true, Fault: "clock"},
		"expirable-semaphore-lying-permits": {Family: "expirable-semaphore", Before: Permits0, Op: StrayRelease,
			Outcome: Released, Lease: None, Waiting: true},
	}
	for _, e := range es {
		w, ok := want[e.Name]
		if !ok {
			continue
		}
		delete(want, e.Name)
		res, _, err := e.Judge(context.Background(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.History()
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := Breaking(h, []checker.Result{res}); !ok || got != w {
			t.Errorf("%s: Breaking = %s, %v; want %s (porcupine: %s)", e.Name, got, ok, w, res.Violation)
		}
	}
	if len(want) > 0 {
		t.Errorf("not in the corpus: %v", want)
	}
}

// Breaking on lost-lock's verdict names the command that found the lock gone: on a recorded multi lock
// run, c3's release refused on the key it held (a list of losses in its details, read back or not).
func TestBreakingNamesTheLoss(t *testing.T) {
	h := corpusHistory(t, "multi-partition-halves-clock-strobe")
	r := checker.LostLock{}.Check(context.Background(), h.OnlySrc(""))
	if r.Valid != checker.Invalid {
		t.Fatalf("lost-lock: %v, want invalid", r.Valid)
	}
	want := Transition{Family: "mutex/multi", Before: HeldOnce, Op: Release, Outcome: Refused, Lease: None}
	b, _ := json.Marshal(r)
	var back checker.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, res := range []checker.Result{r, back} {
		if got, ok := Breaking(h, []checker.Result{res}); !ok || got != want {
			t.Errorf("Breaking = %s, %v; want %s", got, ok, want)
		}
	}
}

// A Map's zero value is ready: Add into it, and Len, Count and Transitions of a nil one.
func TestZeroMap(t *testing.T) {
	var nilMap *Map
	if nilMap.Len() != 0 || nilMap.Count(Transition{}) != 0 || nilMap.Transitions() != nil {
		t.Error("a nil map is not empty")
	}
	var m Map
	x := Transition{Family: "latch", Before: Open, Op: Read, Outcome: Ok, Lease: None}
	o := NewMap()
	o.add(x, 2)
	if added := m.Add(o); len(added) != 1 || m.Count(x) != 2 {
		t.Errorf("Add into a zero Map: %v, count %d", added, m.Count(x))
	}
}
