package checker

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// c builds a command on key k for the count and read-write models; ms times, ret < 0 is unknown.
func c(owner, f string, n, leaseMs, call, ret int64, out Outcome, value int64) porcupine.Operation {
	in := Command{Key: "k", Client: owner, F: f, Owner: owner, N: n, Lease: leaseMs * milli, Call: call * milli, Return: ret * milli}
	if ret < 0 {
		in.Return, out = math.MaxInt64, Unsure
	}
	return porcupine.Operation{ClientId: int(owner[0]), Input: in, Output: Reply{Outcome: out, Value: value},
		Call: in.Call, Return: in.Return}
}

// with is op with its command changed by set: the flags a test turns on (read, vol, fair, splitVote, replay).
func with(op porcupine.Operation, set func(*Command)) porcupine.Operation {
	in := op.Input.(Command)
	set(&in)
	op.Input = in
	return op
}

func read(op porcupine.Operation) porcupine.Operation {
	return with(op, func(c *Command) { c.Read = true })
}

func fair(op porcupine.Operation) porcupine.Operation {
	return with(op, func(c *Command) { c.Fair = true })
}

// splitVote: a Redlock split vote's refusal (split is the proof's).
func splitVote(op porcupine.Operation) porcupine.Operation {
	return with(op, func(c *Command) { c.Split = true })
}

func checkModel(t *testing.T, m porcupine.NondeterministicModel, want porcupine.CheckResult, ops ...porcupine.Operation) {
	t.Helper()
	if got := porcupine.CheckOperationsTimeout(m.ToModel(), ops, 10*time.Second); got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := frontierAll(m, ops); got != want {
		t.Fatalf("frontier search: got %v, want %v", got, want)
	}
}

func TestRWModel(t *testing.T) {
	legal := map[string][]porcupine.Operation{
		"readers share": {
			read(c("a", "acquire", 0, 30000, 0, 1, Applied, 0)),
			read(c("b", "acquire", 0, 30000, 2, 3, Applied, 0)),
			c("w", "acquire", 0, 30000, 4, 5, Refused, 29000),
			read(c("a", "release", 0, 30000, 6, 7, Applied, 0)),
			read(c("b", "release", 0, 30000, 8, 9, Applied, 1)),
			c("w", "acquire", 0, 30000, 10, 11, Applied, 0),
		},
		"the writer may read, and keeps read mode after": {
			c("w", "acquire", 0, 30000, 0, 1, Applied, 0),
			read(c("w", "acquire", 0, 30000, 2, 3, Applied, 0)),
			read(c("r", "acquire", 0, 30000, 4, 5, Refused, 29000)),
			c("w", "release", 0, 30000, 6, 7, Applied, 1),
			read(c("r", "acquire", 0, 30000, 8, 9, Applied, 0)),
		},
		"a lapsed writer's lease lets a reader in": {
			c("w", "acquire", 0, 100, 0, 1, Applied, 0),
			read(c("r", "acquire", 0, 100, 200, 201, Applied, 0)),
		},
	}
	illegal := map[string][]porcupine.Operation{
		"a reader beside a writer": {
			c("w", "acquire", 0, 30000, 0, 1, Applied, 0),
			read(c("r", "acquire", 0, 30000, 2, 3, Applied, 0)),
		},
		"a writer beside a reader": {
			read(c("r", "acquire", 0, 30000, 0, 1, Applied, 0)),
			c("w", "acquire", 0, 30000, 2, 3, Applied, 0),
		},
		"an upgrade from read to write": {
			read(c("r", "acquire", 0, 30000, 0, 1, Applied, 0)),
			c("r", "acquire", 0, 30000, 2, 3, Applied, 0),
		},
		"a read unlock by a non-reader": {
			read(c("r", "acquire", 0, 30000, 0, 1, Applied, 0)),
			read(c("x", "release", 0, 30000, 2, 3, Applied, 1)),
		},
		"a write unlock by a non-writer": {
			c("w", "acquire", 0, 30000, 0, 1, Applied, 0),
			c("x", "release", 0, 30000, 2, 3, Applied, 1),
		},
		"a refusal while free": {
			read(c("r", "acquire", 0, 30000, 0, 1, Refused, 5)),
		},
	}
	for name, ops := range legal {
		t.Run(name, func(t *testing.T) { checkModel(t, RWModel, porcupine.Ok, ops...) })
	}
	for name, ops := range illegal {
		t.Run(name, func(t *testing.T) { checkModel(t, RWModel, porcupine.Illegal, ops...) })
	}
}

func TestSemaphoreModel(t *testing.T) {
	set := c("a", "setPermits", 2, 0, 0, 1, Applied, 1)
	legal := map[string][]porcupine.Operation{
		"two permits, two holders": {set,
			c("a", "acquire", 1, 0, 2, 3, Applied, 1), c("b", "acquire", 1, 0, 4, 5, Applied, 1),
			c("c", "acquire", 1, 0, 6, 7, Refused, 0), c("a", "release", 1, 0, 8, 9, Applied, 1),
			c("c", "acquire", 1, 0, 10, 11, Applied, 1), c("z", "available", 0, 0, 12, 13, Applied, 0)},
		"an unknown acquire may have taken one": {set,
			c("a", "acquire", 1, 0, 2, -1, Unsure, 0), c("b", "acquire", 1, 0, 4, 5, Applied, 1),
			c("c", "acquire", 1, 0, 6, 7, Refused, 0)},
		"set only once": {set, c("b", "setPermits", 5, 0, 2, 3, Refused, 0)},
	}
	illegal := map[string][]porcupine.Operation{
		"more holders than permits": {set,
			c("a", "acquire", 1, 0, 2, 3, Applied, 1), c("b", "acquire", 1, 0, 4, 5, Applied, 1),
			c("c", "acquire", 1, 0, 6, 7, Applied, 1)},
		"a release without a bound": {set,
			c("a", "acquire", 1, 0, 2, 3, Applied, 1), c("a", "release", 1, 0, 4, 5, Applied, 3)},
		"refused with permits free":           {set, c("a", "acquire", 1, 0, 2, 3, Refused, 0)},
		"a permit read that does not add up":  {set, c("z", "available", 0, 0, 2, 3, Applied, 1)},
		"acquire before any permits were set": {c("a", "acquire", 1, 0, 0, 1, Applied, 1)},
	}
	for name, ops := range legal {
		t.Run(name, func(t *testing.T) { checkModel(t, SemaphoreModel, porcupine.Ok, ops...) })
	}
	for name, ops := range illegal {
		t.Run(name, func(t *testing.T) { checkModel(t, SemaphoreModel, porcupine.Illegal, ops...) })
	}
}

func TestPESModel(t *testing.T) {
	set := c("s", "setPermits", 1, 0, 0, 1, Applied, 1)
	legal := map[string][]porcupine.Operation{
		"release of a live permit": {set, c("p1", "acquire", 0, 30000, 2, 3, Applied, 0), c("p1", "release", 0, 0, 4, 5, Applied, 1)},
		"an expired permit is reclaimed and its release says 0": {set,
			c("p1", "acquire", 0, 100, 2, 3, Applied, 0), c("p2", "acquire", 0, 100, 300, 301, Applied, 0),
			c("p1", "release", 0, 0, 400, 401, Refused, 0)},
	}
	illegal := map[string][]porcupine.Operation{
		"over-issue": {set, c("p1", "acquire", 0, 30000, 2, 3, Applied, 0), c("p2", "acquire", 0, 30000, 4, 5, Applied, 0)},
		"a live permit's release says it had expired": {set,
			c("p1", "acquire", 0, 30000, 2, 3, Applied, 0), c("p1", "release", 0, 0, 4, 5, Refused, 0)},
		"an expired permit's release says it was live": {set,
			c("p1", "acquire", 0, 100, 2, 3, Applied, 0), c("p1", "release", 0, 0, 400, 401, Applied, 1)},
	}
	for name, ops := range legal {
		t.Run(name, func(t *testing.T) { checkModel(t, PESModel, porcupine.Ok, ops...) })
	}
	for name, ops := range illegal {
		t.Run(name, func(t *testing.T) { checkModel(t, PESModel, porcupine.Illegal, ops...) })
	}
}

func TestLatchModel(t *testing.T) {
	set := c("a", "setCount", 2, 0, 0, 1, Applied, 1)
	legal := map[string][]porcupine.Operation{
		"count down to open": {set, c("b", "countDown", 0, 0, 2, 3, Applied, 1), c("c", "getCount", 0, 0, 4, 5, Applied, 1),
			c("d", "countDown", 0, 0, 6, 7, Applied, 0), c("c", "getCount", 0, 0, 8, 9, Applied, 0),
			c("a", "setCount", 3, 0, 10, 11, Applied, 1)},
		"an unknown countDown may or may not count": {set, c("b", "countDown", 0, 0, 2, -1, Unsure, 0),
			c("c", "getCount", 0, 0, 4, 5, Applied, 2)},
	}
	illegal := map[string][]porcupine.Operation{
		"a countDown applied twice": {set, c("b", "countDown", 0, 0, 2, 3, Applied, 0)},
		"set while closed":          {set, c("b", "setCount", 5, 0, 2, 3, Applied, 1)},
		"a read that skips a count": {set, c("c", "getCount", 0, 0, 2, 3, Applied, 1)},
	}
	for name, ops := range legal {
		t.Run(name, func(t *testing.T) { checkModel(t, LatchModel, porcupine.Ok, ops...) })
	}
	for name, ops := range illegal {
		t.Run(name, func(t *testing.T) { checkModel(t, LatchModel, porcupine.Illegal, ops...) })
	}
}

func TestMutexModelFairAndExpire(t *testing.T) {
	// A fair lock may refuse a free lock (someone else heads the queue) and answers 1 to unlocking a gone lock.
	check(t, porcupine.Ok, fair(cmd("a", "acquire", 100, 0, 1, Refused, 0)),
		fair(cmd("b", "acquire", 100, 2, 3, Applied, 0)), fair(cmd("b", "release", 100, 500, 501, Applied, 1)))
	// MultiLock's unconditional PEXPIRE moves the holder's lease; on a free key it answers 0.
	check(t, porcupine.Ok, cmd("a", "acquire", 100, 0, 1, Applied, 0), cmd("a", "expire", 1000, 50, 51, Applied, 1),
		cmd("b", "acquire", 100, 300, 301, Refused, 700))
	check(t, porcupine.Illegal, cmd("a", "acquire", 100, 0, 1, Applied, 0), cmd("a", "expire", 1000, 50, 51, Applied, 1),
		cmd("b", "acquire", 100, 300, 301, Applied, 0))
	check(t, porcupine.Illegal, cmd("a", "expire", 1000, 0, 1, Applied, 1))
}

// Where a failover can lose unacknowledged writes, an unknown acquire may vanish at once; elsewhere it holds
// until its lease may end.
func TestVolatileUnknownAcquire(t *testing.T) {
	ghost := cmd("a", "acquire", 30000, 0, -1, Unsure, 0)
	next := cmd("b", "acquire", 30000, 100, 101, Applied, 0)
	// not volatile: "a may never have applied" still explains b's grant
	check(t, porcupine.Ok, ghost, next)
	// a's grant is known (a refused b meanwhile), so only volatility explains b's later grant
	held := cmd("b", "acquire", 30000, 50, 51, Refused, 29000)
	check(t, porcupine.Illegal, ghost, held, next)
	check(t, porcupine.Ok, vol(ghost), vol(held), vol(next))
}

// A Redlock library judged as one lock (a worker's own records, on masters) is refused while the masters'
// votes are split among contenders, with no one holding a majority: such a refusal is legal on a free
// lock, and does not make an unknown acquire the holder. The aioredlock run that found this (chaos on
// redlock, seed 1): c2's acquire cut by a partition ended unknown, every contender was refused for seconds,
// and c3's later grant had no legal order, since only c2's unknown grant explained the refusals.
func TestSplitVoteRefusal(t *testing.T) {
	ghost := cmd("a", "acquire", 30000, 0, -1, Unsure, 0)
	refused := cmd("b", "acquire", 30000, 50, 51, Refused, 0)
	next := cmd("c", "acquire", 30000, 100, 101, Applied, 0)
	check(t, porcupine.Illegal, ghost, refused, next) // one lock: the refusal says a holds it
	check(t, porcupine.Ok, splitVote(ghost), splitVote(refused), splitVote(next))
	// A split refusal of a free lock is legal; it excuses no second holder.
	check(t, porcupine.Ok, splitVote(cmd("b", "acquire", 30000, 0, 1, Refused, 0)))
	check(t, porcupine.Illegal, splitVote(cmd("a", "acquire", 30000, 0, 1, Applied, 0)), splitVote(refused), splitVote(next))
}

// Split is set where the history says a Redlock library was judged as one lock: a worker's acquire records
// (no node) on a topology of masters. On one node, or for a Go client's per-master records, a refusal still
// says the lock is held.
func TestSplitOnlyForOneLockOverMasters(t *testing.T) {
	read := func(topology, node string) Command {
		t.Helper()
		text := fmt.Sprintf(`{"type":"meta","time":1,"data":{"lock":"mutex","topology":%q,"options":{}}}
{"type":"invoke","time":10,"id":1,"client":"c1","thread":1,"node":%q,"key":"lock-0","owner":"c1:1","f":"acquire","args":{"lease_ms":30000}}
{"type":"fail","time":20,"id":1,"client":"c1","thread":1,"node":%q,"key":"lock-0","f":"acquire","value":-2}
`, topology, node, node)
		h, err := history.Read(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		var got []Command
		eachCommand(h, newNames(), mutexCommands, func(_ int, in Command, out Reply) {
			if out.Outcome == Refused {
				got = append(got, in)
			}
		})
		if len(got) != 1 {
			t.Fatalf("%s: refused commands %+v", topology, got)
		}
		// Porcupine is not given a split refusal: it is legal in every state and changes none.
		if n := len(MutexOps(h)); n != map[bool]int{true: 0, false: 1}[got[0].Split] {
			t.Errorf("%s, node %q: %d commands for porcupine", topology, node, n)
		}
		return got[0]
	}
	if !read("redlock", "").Split {
		t.Error("a worker's refused acquire on redlock: not Split")
	}
	for _, c := range []struct{ topology, node string }{{"single", ""}, {"sentinel", ""}, {"redlock", "n1"}} {
		if read(c.topology, c.node).Split {
			t.Errorf("topology %s, node %q: Split", c.topology, c.node)
		}
	}
}
