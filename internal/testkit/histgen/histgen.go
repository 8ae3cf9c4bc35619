// Package histgen writes synthetic histories in the real format (through history.Recorder, with a meta
// record lockcheck check accepts), for the memory and speed benchmarks and the tests of big histories.
package histgen

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"

	"github.com/lockcheck/lockcheck/history"
)

// Spec says what to generate.
type Spec struct {
	Ops     int   // operations (invokes) to record, at least
	Keys    int   // lock keys the rounds spread over
	Clients int   // clients (c1...), 8 when zero
	Seed    int64 // the same seed gives the same history
	// Pauses, when above 0, adds a client-pause of c1 every Pauses rounds (its start, a frozen record and its
	// stop, inside the round): a history heavy with fault windows, as a loop of short faults writes.
	Pauses int
}

// Rounds are 1 ms apart on every key at once; a round's records stay inside it, so rounds never overlap.
const roundNs = int64(1_000_000)

// Write writes a legal reentrant-lock history on one node: on each key in turn, rounds where one client
// takes the lock (tryLock over an acquire), sometimes re-enters it, is renewed by its watchdog, while two
// others are refused (one of those sometimes of unknown outcome), then releases it; a partition fault
// every 10000 rounds; a final heal and a completed end. It returns the number of operations written.
func Write(w io.Writer, s Spec) (int, error) {
	if s.Clients == 0 {
		s.Clients = 8
	}
	if s.Keys < 1 || s.Clients < 3 {
		return 0, fmt.Errorf("histgen: need at least 1 key and 3 clients")
	}
	rec := history.NewRecorder(w, history.NewClock())
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 12))
	owners := make([]string, s.Clients+1)
	for c := 1; c <= s.Clients; c++ {
		owners[c] = fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), rng.Uint64()&0xffffffffffff)
	}
	keys := make([]string, s.Keys)
	for k := range keys {
		keys[k] = "lock-" + strconv.Itoa(k)
	}
	rec.Write(history.Record{Type: history.Meta, Time: 1, Data: []byte(meta(s))})
	g := gen{rec: rec, rng: rng, owners: owners, keys: keys}
	for r := int64(0); g.ops < s.Ops; r++ {
		t0 := (r + 1) * roundNs * 10
		if r%10000 == 5000 {
			g.fault(t0, "start")
		}
		if r%10000 == 5100 {
			g.fault(t0, "stop")
		}
		if s.Pauses > 0 && r%int64(s.Pauses) == 0 {
			for i, phase := range []string{"start", "frozen", "stop"} {
				g.pending = append(g.pending, history.Record{Type: history.Fault, Time: t0 + int64(i)*roundNs, Client: "nemesis",
					F: "client-pause", Phase: phase, Targets: []string{"c1"}})
			}
		}
		for k := range keys {
			if g.ops >= s.Ops {
				break
			}
			g.round(k, t0+int64(k)*(roundNs*9/int64(len(keys))), s.Clients)
		}
		g.flush()
	}
	end := g.last + 1000
	rec.Write(history.Record{Type: history.Fault, Time: end, Client: "nemesis", F: "heal", Phase: "final",
		Detail: "all links healed, all nodes running"})
	rec.Write(history.Record{Type: history.End, Time: end + 1000, F: string(history.EndCompleted)})
	return g.ops, rec.Err()
}

// WriteFile writes the history to path.
func WriteFile(path string, s Spec) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := Write(f, s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

type gen struct {
	rec     *history.Recorder
	rng     *rand.Rand
	owners  []string
	keys    []string
	ops     int
	id      int64
	last    int64
	pending []history.Record // one round's records, sorted by time before they are written
}

// op adds an invoke at call and its completion at ret (none when typ is "": the run ended first).
func (g *gen) op(base history.Record, call, ret int64, typ history.Type, value *int64, args map[string]int64) {
	g.id++
	g.ops++
	inv := base
	inv.Type, inv.Time, inv.ID = history.Invoke, call, g.id
	g.pending = append(g.pending, inv)
	done := base
	done.Args = args
	done.Type, done.Time, done.ID, done.Value = typ, ret, g.id, value
	if typ == history.Fail || typ == history.Unknown {
		done.Error = "ERR lock held"
		if typ == history.Unknown {
			done.Error = "i/o timeout"
		}
	}
	g.pending = append(g.pending, done)
}

// Args maps are shared between records: the encoder only reads them.
var (
	tryArgs     = map[string]int64{"lease_ms": 0, "nested": 0, "wait_ms": 5000}
	acquireArgs = map[string]int64{"lease_ms": 30000}
	releaseArgs = map[string]int64{"attempt": 0, "lease_ms": 30000}
)

// round is one holder's turn on key k, inside [t, t+roundNs).
func (g *gen) round(k int, t int64, clients int) {
	step := roundNs / 20
	h := 1 + g.rng.IntN(clients)
	other := func(skip int) int {
		for {
			if c := 1 + g.rng.IntN(clients); c != h && c != skip {
				return c
			}
		}
	}
	thread := int64(k + 1)
	rec := func(c int, f string, args map[string]int64) history.Record {
		return history.Record{Client: "c" + strconv.Itoa(c), Thread: thread, Key: g.keys[k], Node: "n1",
			Owner: g.owners[c] + ":" + strconv.FormatInt(thread, 10), F: f, Args: args}
	}
	try := rec(h, "tryLock", tryArgs)
	try.Node = ""
	g.op(try, t, t+4*step, history.Ok, nil, map[string]int64{"try_at": t + step})
	g.op(rec(h, "acquire", acquireArgs), t+step, t+3*step, history.Ok, nil, nil)
	nested := g.rng.IntN(4) == 0
	if nested {
		g.op(rec(h, "acquire", acquireArgs), t+5*step, t+6*step, history.Ok, nil, nil)
	}
	if g.rng.IntN(8) == 0 { // the watchdog's renewal, on its own thread
		r := rec(h, "renew", acquireArgs)
		r.Thread = 0
		g.op(r, t+7*step, t+8*step, history.Ok, history.Int64(1), nil)
	}
	a := other(0)
	g.op(rec(a, "acquire", acquireArgs), t+4*step, t+9*step, history.Fail, history.Int64(29990), nil)
	b := other(a)
	typ := history.Fail
	if g.rng.IntN(50) == 0 {
		typ = history.Unknown
	}
	var ttl *int64
	if typ == history.Fail {
		ttl = history.Int64(29980)
	}
	g.op(rec(b, "acquire", acquireArgs), t+6*step, t+10*step, typ, ttl, nil)
	if nested {
		g.op(rec(h, "release", releaseArgs), t+11*step, t+12*step, history.Ok, history.Int64(0), nil)
	}
	cs := rec(h, "", nil)
	cs.Type, cs.Time, cs.Enter, cs.Exit = history.Section, t+13*step, t+4*step, t+13*step
	g.pending = append(g.pending, cs)
	g.op(rec(h, "release", releaseArgs), t+14*step, t+16*step, history.Ok, history.Int64(1), nil)
}

func (g *gen) fault(t int64, phase string) {
	g.pending = append(g.pending, history.Record{Type: history.Fault, Time: t, Client: "nemesis", F: "partition",
		Phase: phase, Targets: []string{"c1->n1"}})
}

// flush writes the round's records in time order, as the recorder would have.
func (g *gen) flush() {
	sort.SliceStable(g.pending, func(i, j int) bool { return g.pending[i].Time < g.pending[j].Time })
	for _, r := range g.pending {
		g.rec.Write(r)
		g.last = max(g.last, r.Time)
	}
	g.pending = g.pending[:0]
}

// meta is the meta record's payload: enough for lockcheck check (the lock, its checks, the options the
// checkers read).
func meta(s Spec) string {
	return fmt.Sprintf(`{"lock":"reentrant","topology":"single","nemesis":["partition"],"seed":%d,`+
		`"options":{"backend":"process","clients":%d,"keys":%d,"latency":"200ms","jitter":"50ms","lease":"0s","synthetic":true},`+
		`"plan":{"seed":%d,"steps":[],"heal_at_ns":0},"versions":{"lockcheck":"histgen"},"checks":{"family":"mutex"},"startup_ms":1}`,
		s.Seed, s.Clients, s.Keys, s.Seed)
}
