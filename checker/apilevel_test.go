package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// apiCall is one recorded call of a hand-built worker history: invoked and completed at ms, on key
// lock-0 by client/thread; typ is ok, fail or unknown; value nil for none.
type apiCall struct {
	from, to       int64
	client         string
	thread         int64
	f, owner, args string
	typ            string
	value          *int64
}

// apiHistory writes the calls as a worker run's history file (no wire records) and reads it.
func apiHistory(t *testing.T, family string, calls []apiCall) *history.History {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"meta","time":1,"data":{"lock":%q,"options":{},"checks":{"family":%q,"permits":1}}}`+"\n", family, family)
	for i, c := range calls {
		owner := c.owner
		if owner == "" {
			owner = fmt.Sprintf("%s:%d", c.client, c.thread)
		}
		args := c.args
		if args == "" {
			args = "{}"
		}
		fmt.Fprintf(&b, `{"type":"invoke","time":%d,"id":%d,"client":%q,"thread":%d,"key":"lock-0","owner":%q,"f":%q,"args":%s}`+"\n",
			c.from*1e6, i+1, c.client, c.thread, owner, c.f, args)
	}
	for i, c := range calls {
		val := ""
		if c.value != nil {
			val = fmt.Sprintf(`,"value":%d`, *c.value)
		}
		fmt.Fprintf(&b, `{"type":%q,"time":%d,"id":%d,"client":%q,"thread":%d,"key":"lock-0","f":%q%s}`+"\n",
			c.typ, c.to*1e6, i+1, c.client, c.thread, c.f, val)
	}
	b.WriteString(`{"type":"end","time":40000000000,"f":"completed"}` + "\n")
	h, err := history.Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// judgeAPI checks h as a family's porcupine row does in a worker run whose wire maps nothing: the
// clients' command records hold none of the worker's calls, so every key is judged at the API level.
func judgeAPI(t *testing.T, m porcupine.NondeterministicModel, h *history.History) Result {
	t.Helper()
	l := &Linearizable{Label: "porcupine", Timeout: 10 * time.Second, Model: m,
		Convert: func(h *history.History) []porcupine.Operation {
			return Commands(h.OnlySrc("").WithoutUnseenKeys(), "setPermits", "acquire", "release", "available",
				"setCount", "countDown", "getCount")
		},
		Level: func(*history.History) string { return "client" }}
	r := l.Check(context.Background(), h)
	if lv := r.Levels; lv[LevelAPI] != 1 || len(lv) != 1 {
		t.Fatalf("levels %v: want lock-0 judged at the API level", lv)
	}
	return r
}

// permitRun is an expirable semaphore of 1 permit: c1/1 takes a permit with lease_ms at 100 ms and
// releases it at release ms (the reply released), c2/1 is granted one after waiting from second-200 ms to second.
func permitRun(lease, release, second int64, released int64) []apiCall {
	args := fmt.Sprintf(`{"lease_ms":%d,"wait_ms":5000}`, lease)
	return []apiCall{
		{0, 5, "c1", 0, "lcp_set_permits", "", `{"permits":1}`, "ok", v(1)},
		{99, 111, "c1", 1, "tryAcquire", "-", args, "ok", nil},
		{100, 110, "c1", 1, "lcp_acquire_permit", "", args, "ok", nil},
		{second - 201, second + 11, "c2", 1, "tryAcquire", "-", args, "ok", nil},
		{second - 200, second + 10, "c2", 1, "lcp_acquire_permit", "", args, "ok", nil}, // waited 200 ms
		{release, release + 10, "c1", 1, "lcp_release_permit", "p1", "{}", "ok", v(released)},
	}
}

// A release that says "released" for a permit whose lease had run out is what such a library gets wrong:
// invalid, where the same history answering released=false is legal (the lapsed permit went to c2).
func TestAPILevelLapsedReleaseSaidReleased(t *testing.T) {
	if r := judgeAPI(t, PESModel, apiHistory(t, "expirable-semaphore", permitRun(300, 900, 600, 1))); r.Valid != Invalid ||
		!strings.Contains(r.Violation, "lease had run out") {
		t.Fatalf("released=true for a lapsed permit: %v (%s); want invalid", r.Valid, r.Violation)
	}
	if r := judgeAPI(t, PESModel, apiHistory(t, "expirable-semaphore", permitRun(300, 900, 600, 0))); r.Valid != Valid {
		t.Fatalf("released=false for a lapsed permit: %v (%s); want valid", r.Valid, r.Violation)
	}
}

// A second grant while the only permit is held and its lease is long is beyond the capacity: the search
// (not the lapsed-release shortcut) finds it, with the grants placed near their replies and again with
// their whole calls. After the first lease ran out the same grant is legal.
func TestAPILevelGrantBeyondCapacity(t *testing.T) {
	if r := judgeAPI(t, PESModel, apiHistory(t, "expirable-semaphore", permitRun(10000, 900, 300, 1))); r.Valid != Invalid ||
		r.Details.(map[string]any)["narrow_search"] == nil {
		t.Fatalf("two permits of one held at once: %v (%s, %v); want invalid, confirmed by the whole calls", r.Valid, r.Violation, r.Details)
	}
	if r := judgeAPI(t, PESModel, apiHistory(t, "expirable-semaphore", permitRun(200, 900, 600, 0))); r.Valid != Valid {
		t.Fatalf("a grant after the first lease ran out: %v (%s); want valid", r.Valid, r.Violation)
	}
}

// The pairing: a grant's permit id is the one its thread releases next on the key; the workload's own
// tryAcquire says whether a permit came.
func TestPermitGrantsPairing(t *testing.T) {
	calls := permitRun(300, 900, 600, 0)
	calls[3].typ = "fail" // c2's tryAcquire refused: its acquire_permit answered ""
	h := apiHistory(t, "expirable-semaphore", calls)
	grants, ids := permitGrants(h)
	if grants[2] != Applied || ids[2] != "p1" || grants[4] != Refused {
		t.Fatalf("grants %v ids %v: want c1's granted as p1, c2's refused", grants, ids)
	}
}

// A plain semaphore's replies: grants and refusals by the count, a release without a count, a read of it.
func TestAPILevelSemaphore(t *testing.T) {
	run := func(read int64) []apiCall {
		return []apiCall{
			{0, 5, "c1", 0, "lcp_set_permits", "", `{"permits":1}`, "ok", v(1)},
			{10, 20, "c1", 1, "lcp_acquire_permits", "", `{"permits":1,"wait_ms":0}`, "ok", v(1)},
			{30, 40, "c2", 1, "lcp_acquire_permits", "", `{"permits":1,"wait_ms":0}`, "ok", v(0)},
			{50, 60, "c1", 1, "lcp_release_permits", "", `{"permits":1}`, "ok", nil},
			{70, 80, "c1", 0, "lcp_available", "", "{}", "ok", v(read)},
		}
	}
	if r := judgeAPI(t, SemaphoreModel, apiHistory(t, "semaphore", run(1))); r.Valid != Valid {
		t.Fatalf("legal semaphore: %v (%s)", r.Valid, r.Violation)
	}
	if r := judgeAPI(t, SemaphoreModel, apiHistory(t, "semaphore", run(2))); r.Valid != Invalid {
		t.Fatalf("2 available of 1 permit: %v; want invalid", r.Valid)
	}
}

// A latch's replies: await is done only once the count reached zero.
func TestAPILevelLatch(t *testing.T) {
	run := func(awaitAt int64) []apiCall {
		return []apiCall{
			{0, 5, "c1", 0, "lcp_set_count", "", `{"count":2}`, "ok", v(1)},
			{10, 20, "c2", 1, "lcp_count_down", "", "{}", "ok", nil},
			{30, 40, "c3", 1, "lcp_count_down", "", "{}", "ok", nil},
			{awaitAt, awaitAt + 5, "c1", 1, "lcp_await", "", `{"wait_ms":0}`, "ok", v(1)},
		}
	}
	if r := judgeAPI(t, LatchModel, apiHistory(t, "latch", run(50))); r.Valid != Valid {
		t.Fatalf("await after the last countDown: %v (%s)", r.Valid, r.Violation)
	}
	if r := judgeAPI(t, LatchModel, apiHistory(t, "latch", run(22))); r.Valid != Invalid {
		t.Fatalf("await done while the count was 1: %v; want invalid", r.Valid)
	}
}

// A key whose commands the wire (or a client's own records) holds keeps that level: no API records
// are added to it.
func TestAPILevelKeepsOtherLevels(t *testing.T) {
	h := apiHistory(t, "semaphore", []apiCall{
		{0, 5, "c1", 0, "lcp_set_permits", "", `{"permits":1}`, "ok", v(1)},
		{0, 5, "c2", 1, "setPermits", "", `{"permits":1}`, "ok", v(1)},
	})
	if ops, keys := APIOps(h, nil); len(ops) != 0 || len(keys) != 0 {
		t.Fatalf("a key a client's own records changed: %d API ops on %v; want none", len(ops), keys)
	}
	h = apiHistory(t, "semaphore", []apiCall{{0, 5, "c1", 0, "lcp_set_permits", "", `{"permits":1}`, "ok", v(1)}})
	if ops, _ := APIOps(h, map[string]bool{"lock-0": true}); len(ops) != 0 {
		t.Fatalf("a key judged at the wire level: %d API ops; want none", len(ops))
	}
}

// A worker's "not released" is a guard of the search (frontier.go): at every state PESModel either
// refuses it or leaves the state as it was.
func TestAPIRefusedReleaseIsGuard(t *testing.T) {
	s := PESModel.Step(PESModel.Init()[0], Command{F: "setPermits", N: 2}, Reply{})[0]
	for i, id := range []string{"p1", "p2"} {
		in := Command{Key: "k", F: "acquire", Owner: id, Lease: int64(300 * time.Millisecond), Call: int64(i) * 1e6,
			Return: int64(i)*1e6 + 1e5, API: true}
		s = PESModel.Step(s, in, Reply{Outcome: Applied})[0]
	}
	for _, id := range []string{"p1", "p2", "p3"} {
		for _, ret := range []int64{1e8, 1e9} {
			rel := porcupine.Operation{Input: Command{Key: "k", F: "release", Owner: id, Call: ret - 1e6, Return: ret, API: true},
				Output: Reply{Outcome: Refused}}
			if !guard(rel) {
				t.Fatalf("%+v is no guard", rel.Input)
			}
			for _, n := range PESModel.Step(s, rel.Input, rel.Output) {
				if n != s {
					t.Fatalf("refused release of %s at %d changed %+v to %+v", id, ret, s, n)
				}
			}
		}
	}
}

// A latch's await (API level) only reads the count: a guard of the search too.
func TestAPIAwaitIsGuard(t *testing.T) {
	for _, s := range []LatchState{{0}, {1}, {2}} {
		for _, done := range []int64{0, 1} {
			aw := porcupine.Operation{Input: Command{Key: "k", F: "await", API: true}, Output: Reply{Outcome: Applied, Value: done}}
			if !guard(aw) {
				t.Fatal("await is no guard")
			}
			for _, n := range LatchModel.Step(s, aw.Input, aw.Output) {
				if n != s {
					t.Fatalf("await done=%d changed %+v to %+v", done, s, n)
				}
			}
		}
	}
}
