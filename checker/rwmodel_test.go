package checker

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/anishathalye/porcupine"
)

// The readers string is rewritten in place (no map per step): it must stay what a map of readers, sorted
// by owner, would give, whatever the order of grants and releases, and whatever bytes the windows hold.
func TestReadersStringAsAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	owners := []string{"c1/1", "c1/2", "c2/1", "a:1", "z-9:write", "m"}
	for trial := 0; trial < 2000; trial++ {
		want := map[string]reader{}
		rs := ""
		for step := 0; step < 12; step++ {
			o := owners[r.Intn(len(owners))]
			e := want[o]
			e.owner = o
			if e.holds > 0 && r.Intn(2) == 0 {
				e.holds--
			} else {
				e.holds++
			}
			e.lo, e.hi = r.Int63()-r.Int63(), int64(r.Uint64()) // zero bytes and signs inside the windows
			want[o] = e
			rs = withReader(rs, e)
			var keys []string
			for k, v := range want {
				if v.holds > 0 {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			var got []reader
			for left := rs; left != ""; {
				var g reader
				g, left = nextReader(left)
				got = append(got, g)
			}
			if len(got) != len(keys) {
				t.Fatalf("after %+v: %d readers %+v, want %v", e, len(got), got, keys)
			}
			for i, k := range keys {
				if got[i] != want[k] {
					t.Fatalf("after %+v: reader %d is %+v, want %+v", e, i, got[i], want[k])
				}
			}
			for _, k := range owners {
				if got := readerHolds(rs, k); got != max(want[k].holds, 0) {
					t.Fatalf("holds of %s: %d, want %d", k, got, want[k].holds)
				}
			}
		}
	}
}

// Each reader keeps its own lease: once a reader leaves, the lock lives as long as the longest remaining
// reader's lease, and a writer granted before that one could end is illegal (the exclusion checker says
// so too). This is examples/schedules/rwlock-readers-leases.yaml on the broken twin
// (rwlock-zset-broken.yaml), whose readers set expired with the short reader's lease.
func TestRWModelKeepsEachReadersLease(t *testing.T) {
	a := read(c("a", "acquire", 0, 10000, 0, 1, Applied, 0))
	b := read(c("b", "acquire", 0, 300, 100, 101, Applied, 0))
	bDone := read(c("b", "release", 0, 0, 250, 251, Applied, 0))
	legal := map[string][]porcupine.Operation{
		"the writer waits for the long reader": {a, b, bDone,
			c("w", "acquire", 0, 2000, 400, 401, Refused, 9600),
			read(c("a", "release", 0, 0, 1600, 1601, Applied, 1)),
			c("w", "acquire", 0, 2000, 1650, 1651, Applied, 0)},
		"the writer after the long reader's lease": {a, b, bDone, c("w", "acquire", 0, 2000, 10100, 10101, Applied, 0)},
		"the last reader left after the others' leases": {
			read(c("a", "acquire", 0, 300, 0, 1, Applied, 0)), b, read(c("c", "acquire", 0, 10000, 150, 151, Applied, 0)),
			read(c("c", "release", 0, 0, 200, 201, Applied, 0)),
			read(c("b", "release", 0, 0, 500, 501, Applied, 1))},
		"a re-entered reader lasts at least as long as its first hold": {
			read(c("a", "acquire", 0, 10000, 0, 1, Applied, 0)), read(c("a", "acquire", 0, 300, 2, 3, Applied, 0)),
			b, read(c("a", "release", 0, 0, 200, 201, Applied, 0)), read(c("b", "release", 0, 0, 250, 251, Applied, 0)),
			c("w", "acquire", 0, 2000, 400, 401, Refused, 9000)},
	}
	illegal := map[string][]porcupine.Operation{
		"the writer beside the long reader": {a, b, bDone, c("w", "acquire", 0, 2000, 400, 401, Applied, 0)},
		"the last, while another reader is inside its lease": {a, b,
			read(c("b", "release", 0, 0, 250, 251, Applied, 1))},
	}
	for name, ops := range legal {
		t.Run(name, func(t *testing.T) { checkModel(t, RWModel, porcupine.Ok, ops...) })
	}
	for name, ops := range illegal {
		t.Run(name, func(t *testing.T) { checkModel(t, RWModel, porcupine.Illegal, ops...) })
	}
}

// A reader past its own lease, while another keeps the lock, may find its entry gone: the readers set of
// examples/locks/rwlock.yaml drops a lapsed reader's score at the next script (a writer's poll). Explore's
// 30 minutes on that spec found its unlock's refusal illegal (the model kept the reader until the whole
// lock's lease ended, as Redisson's hash keeps the field). A refusal within the reader's lease stays illegal.
func TestRWModelLapsedReaderMayBeGone(t *testing.T) {
	a := read(c("a", "acquire", 0, 10000, 0, 1, Applied, 0))
	b := read(c("b", "acquire", 0, 100, 222, 223, Applied, 0))
	checkModel(t, RWModel, porcupine.Ok, a, b, read(c("b", "release", 0, 0, 424, 425, Refused, -1)),
		c("w", "acquire", 0, 1000, 500, 501, Refused, 9500))
	checkModel(t, RWModel, porcupine.Ok, a, b, read(c("b", "release", 0, 0, 424, 425, Applied, 0)))
	checkModel(t, RWModel, porcupine.Illegal, a, b, read(c("b", "release", 0, 0, 250, 251, Refused, -1)))
	checkModel(t, RWModel, porcupine.Illegal, a, b, read(c("b", "release", 0, 0, 424, 425, Refused, -1)),
		c("w", "acquire", 0, 1000, 500, 501, Applied, 0))
}

// Where a failover can lose writes (Volatile), the holds the model counts may not be the server's: a
// refusal from the isolated old primary is left out, an unacknowledged grant may be gone. There a read
// unlock's 1 frees the lock and one that leaves others lets the lease end at any time, as before each
// reader had its own window (a sentinel failover run of the Go rwlock, seed 13, was found invalid without
// this: a reader the model still counted, the server long without it).
func TestRWModelVolatileReadersMayBeGone(t *testing.T) {
	ops := []porcupine.Operation{
		read(c("a", "acquire", 0, 30000, 0, 1, Applied, 0)), read(c("b", "acquire", 0, 30000, 2, 3, Applied, 0)),
		read(c("b", "release", 0, 0, 100, 101, Applied, 1)), c("w", "acquire", 0, 2000, 200, 201, Applied, 0)}
	checkModel(t, RWModel, porcupine.Illegal, ops...)
	for i := range ops {
		ops[i] = vol(ops[i])
	}
	checkModel(t, RWModel, porcupine.Ok, ops...)
}

// A read renewal answers 1 when the reader's field is in the hash, yet renews its timeout keys only if they
// are still there. Explore's rwlock seed 2: b's 600 ms watchdog hold, a renewal sent just before the node
// paused and run at its resume (after b's lease had run out), answered 1 and renewed nothing; a, holding for
// 3 s, then released as the last reader. The model took the late 1 as b's lease renewed and found a's
// "last" illegal; a renewal that returned while b's lease surely lasted still renews it.
func TestRWModelLateReadRenewal(t *testing.T) {
	a := read(c("a", "acquire", 0, 3000, 0, 1, Applied, 0))
	b := read(c("b", "acquire", 0, 600, 300, 301, Applied, 0))
	renew := read(c("b", "renew", 0, 600, 400, 401, Applied, 1))
	aLast := read(c("a", "release", 0, 0, 1206, 1207, Applied, 1))
	late := read(c("b", "renew", 0, 600, 600, 1005, Applied, 1))
	next := read(c("b", "renew", 0, 600, 1205, 1206, Applied, 1))
	checkModel(t, RWModel, porcupine.Ok, a, b, renew, late, next, aLast)
	inTime := read(c("b", "renew", 0, 600, 600, 605, Applied, 1))
	next = read(c("b", "renew", 0, 600, 800, 801, Applied, 1))
	checkModel(t, RWModel, porcupine.Illegal, a, b, renew, inTime, next, aLast)
}
