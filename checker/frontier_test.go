package checker

import (
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// frontierAll runs the frontier search on every key of ops: Illegal if any key is, else Unknown if any
// key is, else Ok.
// A legal verdict comes with an order that CheckOrder verifies, or it is reported as Unknown here.
func frontierAll(m porcupine.NondeterministicModel, ops []porcupine.Operation) porcupine.CheckResult {
	res := porcupine.Ok
	for _, part := range m.Partition(ops) {
		v := frontierKey(context.Background(), m, part)
		switch v.res {
		case porcupine.Illegal:
			return porcupine.Illegal
		case porcupine.Unknown:
			res = porcupine.Unknown
		case porcupine.Ok:
			if CheckOrder(m, part, v.order) != nil {
				res = porcupine.Unknown
			}
		}
	}
	return res
}

// CheckOrder itself must refuse what is not a legal order.
func TestCheckOrder(t *testing.T) {
	ops := []porcupine.Operation{
		cmd("a", "acquire", 30000, 0, 1, Applied, 0),
		cmd("a", "release", 30000, 2, 3, Applied, 1),
		cmd("b", "acquire", 30000, 4, 5, Applied, 0),
	}
	if err := CheckOrder(MutexModel, ops, []int{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]int{{0, 2, 1}, {1, 0, 2}, {0, 1}, {0, 1, 1}} {
		if CheckOrder(MutexModel, ops, bad) == nil {
			t.Fatalf("order %v accepted", bad)
		}
	}
}

func vol(op porcupine.Operation) porcupine.Operation {
	return with(op, func(c *Command) { c.Volatile = true })
}

// unsureUntil is an unknown outcome whose effect is bounded (lockcheck's own topologies): ret in ms.
func unsureUntil(op porcupine.Operation, ret int64) porcupine.Operation {
	in := op.Input.(Command)
	in.Return = ret * milli
	op.Input, op.Return, op.Output = in, ret*milli, Reply{Outcome: Unsure}
	return op
}

// Each shortcut of the search, with the history that taking it wrongly would misjudge.
func TestFrontierShortcuts(t *testing.T) {
	tests := map[string]struct {
		want porcupine.CheckResult
		ops  []porcupine.Operation
	}{
		// Every command has returned at 2 ms, but a's lease still runs: a cut there that started the
		// rest from a free lock would accept b's grant.
		"a quiet moment is not a free lock": {porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("b", "acquire", 100, 50, 51, Applied, 0),
		}},
		// After b's release every definite command has returned, yet a's unknown grant may land after it:
		// c's refusal needs it. A cut at b's release would call c's refusal illegal.
		"an unknown grant may land after a quiet moment": {porcupine.Ok, []porcupine.Operation{
			unsureUntil(cmd("a", "acquire", 30000, 0, 0, Unsure, 0), 500),
			cmd("b", "acquire", 30000, 100, 101, Applied, 0),
			cmd("b", "release", 30000, 200, 201, Applied, 1),
			cmd("c", "acquire", 30000, 300, 301, Refused, 0),
		}},
		// Deferring an unknown grant that changes nothing must not drop its later effect, nor let it
		// take effect twice: two releases need two grants.
		"a deferred unknown grant takes effect once": {porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			unsureUntil(cmd("a", "acquire", 30000, 10, 10, Unsure, 0), 100),
			cmd("a", "release", 30000, 20, 21, Applied, 0),
			cmd("a", "release", 30000, 30, 31, Applied, 0),
			cmd("a", "release", 30000, 40, 41, Applied, 1),
		}},
		"a deferred unknown re-entry explains a later release": {porcupine.Ok, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			unsureUntil(cmd("a", "acquire", 30000, 10, 10, Unsure, 0), 100),
			cmd("a", "release", 30000, 20, 21, Applied, 0),
			cmd("a", "release", 30000, 30, 31, Applied, 1),
		}},
		// A refusal placed as soon as it holds: here it holds only while a holds, late in its interval.
		"a refusal in flight across a grant": {porcupine.Ok, []porcupine.Operation{
			cmd("c", "acquire", 30000, 0, 100, Refused, 0),
			cmd("a", "acquire", 30000, 10, 20, Applied, 0),
			cmd("a", "release", 30000, 30, 40, Applied, 1),
		}},
		"a refusal with no holder in its interval": {porcupine.Illegal, []porcupine.Operation{
			cmd("c", "acquire", 30000, 0, 5, Refused, 0),
			cmd("a", "acquire", 30000, 10, 20, Applied, 0),
		}},
		// An unknown grant applied and then lost in a failover is the same lock as one never applied,
		// but it is done: it cannot apply again later.
		"a lost unknown grant cannot come back": {porcupine.Illegal, []porcupine.Operation{
			vol(unsureUntil(cmd("a", "acquire", 30000, 0, 0, Unsure, 0), 60)),
			vol(cmd("b", "acquire", 30000, 10, 11, Refused, 0)),
			vol(cmd("b", "acquire", 30000, 20, 21, Applied, 0)),
			vol(cmd("b", "release", 30000, 30, 31, Applied, 1)),
			vol(cmd("c", "acquire", 30000, 40, 41, Refused, 0)),
			vol(cmd("c", "acquire", 30000, 100, 101, Refused, 0)),
		}},
		"two unknown grants, the second lands late": {porcupine.Ok, []porcupine.Operation{
			vol(unsureUntil(cmd("a", "acquire", 30000, 0, 0, Unsure, 0), 60)),
			vol(unsureUntil(cmd("d", "acquire", 30000, 5, 5, Unsure, 0), 90)),
			vol(cmd("b", "acquire", 30000, 10, 11, Refused, 0)),
			vol(cmd("b", "acquire", 30000, 20, 21, Applied, 0)),
			vol(cmd("b", "release", 30000, 30, 31, Applied, 1)),
			vol(cmd("c", "acquire", 30000, 40, 41, Refused, 0)),
			vol(cmd("c", "acquire", 30000, 100, 101, Refused, 0)),
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { check(t, tc.want, tc.ops...) })
	}
}

// randomOps builds a small random history of one key: a few owners, overlapping commands, some of
// unknown outcome (bounded or not), replays, and the given leases (ms).
func randomOps(r *rand.Rand, fs []string, leases []int64, n int) []porcupine.Operation {
	owners := []string{"a", "b", "c"}
	volatile, fair, split := r.Intn(3) == 0, r.Intn(4) == 0, r.Intn(4) == 0
	var ops []porcupine.Operation
	for i := 0; i < n; i++ {
		call := int64(r.Intn(60))
		ret := call + int64(r.Intn(15))
		o := owners[r.Intn(len(owners))]
		in := Command{Key: "k", Client: o, F: fs[r.Intn(len(fs))], Owner: o, Lease: leases[r.Intn(len(leases))] * milli,
			Call: call * milli, Return: ret * milli, Volatile: volatile, Fair: fair, Split: split, Read: r.Intn(3) == 0,
			N: int64(1 + r.Intn(2)), Replay: r.Intn(10) == 0}
		out := Reply{Outcome: Outcome(r.Intn(3)), Value: int64(r.Intn(3))}
		if out.Outcome == Unsure && r.Intn(3) == 0 {
			in.Return = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: i, Input: in, Output: out, Call: in.Call, Return: in.Return})
	}
	return ops
}

// The frontier search must give porcupine's verdict on every history porcupine decides: random small
// histories of every model, many of them legal only by a narrow order.
func TestFrontierAgreesWithPorcupine(t *testing.T) {
	models := []struct {
		name string
		m    porcupine.NondeterministicModel
		fs   []string
	}{
		{"mutex", MutexModel, []string{"acquire", "acquire", "release", "renew", "expire"}},
		{"rwlock", RWModel, []string{"acquire", "acquire", "release", "renew"}},
		{"semaphore", SemaphoreModel, []string{"setPermits", "acquire", "acquire", "release", "available"}},
		{"expirable", PESModel, []string{"setPermits", "acquire", "acquire", "release", "available"}},
		{"latch", LatchModel, []string{"setCount", "countDown", "countDown", "getCount"}},
	}
	for _, mc := range models {
		t.Run(mc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(1))
			counts := map[porcupine.CheckResult]int{}
			for i := 0; i < 2000; i++ {
				ops := randomOps(r, mc.fs, []int64{20, 1000}, 3+r.Intn(8))
				want := porcupine.CheckOperationsTimeout(mc.m.ToModel(), ops, 5*time.Second)
				if want == porcupine.Unknown {
					continue
				}
				counts[want]++
				if got := frontierAll(mc.m, ops); got != want {
					for _, o := range ops {
						t.Logf("%+v %+v", o.Input, o.Output)
					}
					t.Fatalf("history %d: frontier %v, porcupine %v", i, got, want)
				}
			}
			// Both verdicts must be well represented, or the comparison proves little.
			if counts[porcupine.Ok] < 200 || counts[porcupine.Illegal] < 200 {
				t.Fatalf("verdicts %v: too lopsided", counts)
			}
			t.Logf("%s: %v", mc.name, counts)
		})
	}
}

// The two rules the search's shortcuts rest on, for every model and many reachable states: a command of
// unknown outcome may leave the state as it was (deferrable), and a guard either is illegal or leaves the
// state as it was.
func TestGuardsOnlyTest(t *testing.T) {
	for _, m := range []porcupine.NondeterministicModel{MutexModel, RWModel, SemaphoreModel, PESModel, LatchModel} {
		r := rand.New(rand.NewSource(2))
		for i := 0; i < 2000; i++ {
			ops := randomOps(r, []string{"acquire", "release", "renew", "setPermits", "setCount", "countDown"}, []int64{20, 1000}, 6)
			states := m.Init()
			for _, o := range ops {
				for _, s := range states {
					for _, probe := range ops {
						steps := m.Step(s, probe.Input, probe.Output)
						if deferrable(probe) && !contains(steps, s) {
							t.Fatalf("%s: unknown %+v does not leave %+v as it was: %v", m.DescribeState(s), probe.Input, s, steps)
						}
						if guard(probe) && !unboundedIn(ops) {
							for _, n := range steps {
								if n != s {
									t.Fatalf("guard %+v changed %+v to %+v", probe.Input, s, n)
								}
							}
						}
					}
				}
				if next := stepAll(m, states, o); len(next) > 0 && len(next) < 50 {
					states = next
				}
			}
		}
	}
}

func ExampleLinearizable_frontier() {
	fmt.Println(frontierAll(MutexModel, []porcupine.Operation{
		cmd("a", "acquire", 100, 0, 1, Applied, 0),
		cmd("b", "acquire", 100, 50, 51, Applied, 0),
	}) == porcupine.Illegal)
	// Output: true
}

func unboundedIn(ops []porcupine.Operation) bool {
	for _, o := range ops {
		if o.Return == math.MaxInt64 {
			return true
		}
	}
	return false
}

// simulated runs a lock on one key for n commands of 8 clients, each command taking effect at a moment
// inside its interval, in that order, with unknown outcomes (applied or not) at the given rate returning
// 200 ms later, as a failover's burst leaves them. Legal by construction; double, when set, grants the
// lock to a second owner once.
func simulated(r *rand.Rand, n int, unknown float64, double bool) []porcupine.Operation {
	var ops []porcupine.Operation
	owner, holds := "", 0
	doubled := false
	for i := 0; i < n; i++ {
		lp := int64(i) * 2 * milli
		call, ret := lp-int64(r.Intn(6))*milli, lp+int64(r.Intn(6))*milli
		o := fmt.Sprintf("c%d", r.Intn(8))
		f := "acquire"
		if o == owner && r.Intn(3) > 0 {
			f = "release"
		}
		in := Command{Key: "k", Client: o, F: f, Owner: o, Lease: int64(time.Minute), Call: call, Return: ret}
		var out Reply
		apply := true
		if r.Float64() < unknown {
			out, apply = Reply{Outcome: Unsure}, r.Intn(2) == 0
			in.Return = ret + 200*milli
		}
		switch {
		case f == "acquire" && (owner == "" || owner == o):
			if apply {
				owner, holds = o, holds+1
			}
			if out.Outcome != Unsure {
				out = Reply{Outcome: Applied}
			}
		case f == "acquire" && double && !doubled && i > n/2:
			owner, holds, doubled = o, 1, true
			if out.Outcome != Unsure {
				out = Reply{Outcome: Applied}
			}
		case f == "acquire":
			if out.Outcome != Unsure {
				out = Reply{Outcome: Refused}
			}
		default: // the owner's release
			if apply {
				holds--
				if holds == 0 {
					owner = ""
				}
			}
			if out.Outcome != Unsure {
				out = Reply{Outcome: Applied, Value: map[bool]int64{true: 1}[holds == 0]}
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: i % 8, Input: in, Output: out, Call: in.Call, Return: in.Return})
	}
	return ops
}

// Hundreds of unknown outcomes on one key, many in flight at once: decided, legal or not, in seconds.
func TestFrontierManyUnknowns(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, double := range []bool{false, true} {
		ops := simulated(r, 3000, 0.1, double)
		want := porcupine.Ok
		if double {
			want = porcupine.Illegal
		}
		start := time.Now()
		v := frontierKey(context.Background(), MutexModel, ops)
		t.Logf("double grant %v: %v in %s, %d unknown, at most %d in flight, %d configurations", double, v.res,
			time.Since(start).Round(time.Millisecond), countUnknown(ops), v.maxInFlight, v.maxConfigs)
		if v.res != want {
			t.Fatalf("double grant %v: %v (%s), want %v", double, v.res, v.why, want)
		}
		if countUnknown(ops) < 200 {
			t.Fatalf("only %d unknown outcomes", countUnknown(ops))
		}
	}
}

// A key the frontier cannot take goes to porcupine's own search; one neither decides is unknown, and the
// verdict says which key and why.
func TestLinearizableSaysWhy(t *testing.T) {
	var wide []porcupine.Operation // 70 unknown grants in flight at once: more than the frontier's slots
	for i := 0; i < 70; i++ {
		wide = append(wide, cmd(fmt.Sprintf("o%d", i), "acquire", 30000, int64(i), -1, Unsure, 0))
	}
	wide = append(wide, cmd("a", "acquire", 30000, 100, 101, Refused, 0))
	lin := func(ops []porcupine.Operation, timeout time.Duration) *Linearizable {
		return &Linearizable{Label: "porcupine", Model: MutexModel, Timeout: timeout,
			Convert: func(*history.History) []porcupine.Operation { return ops }}
	}
	res := lin(wide, time.Minute).Check(context.Background(), &history.History{})
	d := res.Details.(map[string]any)
	if res.Valid != Valid || d["search"] != "frontier, then porcupine" {
		t.Fatalf("wide key: %v by %v (%s)", res.Valid, d["search"], res.Summary)
	}
	res = lin(simulated(rand.New(rand.NewSource(4)), 500, 0.1, false), time.Nanosecond).Check(context.Background(), &history.History{})
	if res.Valid != Unknown || !strings.Contains(res.Summary, "key k: the search ran out of time") {
		t.Fatalf("no time: %v (%s)", res.Valid, res.Summary)
	}
	res = lin([]porcupine.Operation{cmd("a", "acquire", 100, 0, 1, Applied, 0), cmd("b", "acquire", 100, 50, 51, Applied, 0)},
		time.Minute).Check(context.Background(), &history.History{})
	if res.Valid != Invalid || !strings.Contains(res.Violation, "b acquire → ok (called 0.050s, returned 0.051s) cannot take effect") ||
		!strings.Contains(res.Violation, "held by a ×1") {
		t.Fatalf("double grant: %v (%s)", res.Valid, res.Violation)
	}
}

// The search honours its bound inside one return's expansion too: this recorded history (the naive lock
// under kill, 67 unknown outcomes on one key) once kept one return expanding for 20 minutes past a 60 s
// --check-timeout, because the bound was only checked between events.
func TestFrontierBoundInsideOneReturn(t *testing.T) {
	h := gzHistory(t, filepath.Join("testdata", "slow", "naive-kill-wide-return.jsonl.gz"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan keyVerdict, 1)
	go func() {
		ops := MutexOps(h)
		for _, part := range MutexModel.Partition(ops) {
			done <- frontierKey(ctx, MutexModel, part)
			return
		}
	}()
	select {
	case v := <-done:
		if v.res == porcupine.Unknown && !strings.Contains(v.why, "ran out of time") {
			t.Fatalf("unknown, but not for time: %s", v.why)
		}
	case <-time.After(2 * time.Minute): // far beyond the 1 s bound: the search ignored it
		t.Fatal("the search ran on 2 minutes past its 1 s bound")
	}
}

// A fault-free read-write lock history (8 clients × 2 threads, 4 s) with every call moved up to 30 ms
// earlier and every return up to 30 ms later, as a loaded machine widens them (a legal order stays legal):
// 22 commands in flight at once. The frontier alone took 22–54 s to decide it (unknown at make test's 60 s
// bound beside two busy loops); porcupine's depth-first search, tried once the frontier passes its small
// bound, takes milliseconds.
func TestWideFaultFreeHistoryDecided(t *testing.T) {
	h := gzHistory(t, filepath.Join("testdata", "slow", "rwlock-widened-30ms.jsonl.gz"))
	l := &Linearizable{Label: "porcupine", Model: RWModel, Timeout: 10 * time.Second,
		Convert: func(h *history.History) []porcupine.Operation { return Commands(h, "acquire", "release", "renew") }}
	res := l.Check(context.Background(), h)
	if res.Valid != Valid {
		t.Fatalf("%v: %s", res.Valid, res.Summary)
	}
	if d := res.Details.(map[string]any); d["max_in_flight"].(int) < 20 {
		t.Fatalf("only %v commands in flight at once: the history is not the wide one", d["max_in_flight"])
	}
}

// gzHistory reads a recorded history kept gzipped in testdata.
func gzHistory(t *testing.T, path string) *history.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	h, err := history.Read(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return h
}
