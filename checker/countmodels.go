package checker

import (
	"fmt"
	"hash/fnv"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// SemState is a semaphore's permit counter; Set says trySetPermits has run.
type SemState struct {
	Set   bool
	Avail int64
}

func semApply(s SemState, in Command, out Reply) (SemState, bool) {
	switch in.F {
	case "setPermits":
		if out.Outcome == Refused {
			return s, s.Set
		}
		if s.Set {
			return s, false
		}
		return SemState{Set: true, Avail: in.N}, true
	case "acquire":
		enough := s.Avail >= max(in.N, 1)
		if out.Outcome == Refused {
			return s, !enough
		}
		if !enough {
			return s, false
		}
		s.Avail -= max(in.N, 1)
		return s, true
	case "release": // replies the new count
		s.Avail += in.N
		return s, out.Outcome != Applied || in.NoCount || out.Value == s.Avail
	case "available":
		return s, out.Outcome != Applied || out.Value == s.Avail
	}
	return s, false
}

func unsureOr(apply func(s interface{}) (interface{}, bool), s interface{}, out Reply) []interface{} {
	var next []interface{}
	if out.Outcome == Unsure {
		next = append(next, s)
	}
	if a, ok := apply(s); ok {
		next = append(next, a)
	}
	return next
}

// SemaphoreModel is RSemaphore's counter, partitioned by key: an acquire succeeds only with enough permits,
// a release's reply is the new count, a read sees the count.
var SemaphoreModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{SemState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		in, out := input.(Command), output.(Reply)
		return unsureOr(func(s interface{}) (interface{}, bool) { return semApply(s.(SemState), in, out) }, state, out)
	},
	Hash: func(state interface{}) uint64 {
		s := state.(SemState)
		return uint64(s.Avail)*2 + map[bool]uint64{true: 1}[s.Set]
	},
	Partition:         partitionByCommandKey,
	DescribeOperation: describeCommand,
	DescribeState: func(state interface{}) string {
		s := state.(SemState)
		if !s.Set {
			return "permits not set"
		}
		return fmt.Sprintf("%d available", s.Avail)
	},
}

// LatchState is a latch's count (0: open, the key is gone).
type LatchState struct{ Count int64 }

func latchApply(s LatchState, in Command, out Reply) (LatchState, bool) {
	switch in.F {
	case "setCount":
		if out.Outcome == Refused {
			return s, s.Count > 0
		}
		return LatchState{Count: in.N}, s.Count == 0
	case "countDown": // replies the count after
		v := s.Count - 1
		return LatchState{Count: max(v, 0)}, out.Outcome != Applied || in.NoCount || out.Value == v
	case "getCount":
		return s, out.Outcome != Applied || out.Value == s.Count
	case "await": // a library's await (API level): Value 1 once it saw the count at zero, 0 when it gave up
		return s, out.Outcome != Applied || (out.Value == 1) == (s.Count == 0)
	}
	return s, false
}

// LatchModel is RCountDownLatch's count, partitioned by key: set only when open, each countDown takes one,
// reads see the count.
var LatchModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{LatchState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		in, out := input.(Command), output.(Reply)
		return unsureOr(func(s interface{}) (interface{}, bool) { return latchApply(s.(LatchState), in, out) }, state, out)
	},
	Hash:              func(state interface{}) uint64 { return uint64(state.(LatchState).Count) },
	Partition:         partitionByCommandKey,
	DescribeOperation: describeCommand,
	DescribeState:     func(state interface{}) string { return fmt.Sprintf("count %d", state.(LatchState).Count) },
}

// PESState is a permit-expirable semaphore: available permits and the issued ones as
// "id@lo@hi;..." sorted (lo..hi bounds the permit's deadline on the run clock).
type PESState struct {
	Set   bool
	Avail int64
	Held  string
}

type permit struct {
	id     string
	lo, hi int64
}

func parseHeld(s string) []permit {
	var out []permit
	for _, p := range strings.Split(s, ";") {
		f := strings.Split(p, "@")
		if len(f) == 3 {
			lo, _ := strconv.ParseInt(f[1], 10, 64)
			hi, _ := strconv.ParseInt(f[2], 10, 64)
			out = append(out, permit{f[0], lo, hi})
		}
	}
	return out
}

func heldString(ps []permit) string {
	sort.Slice(ps, func(i, j int) bool { return ps[i].id < ps[j].id })
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s@%d@%d", p.id, p.lo, p.hi))
	}
	return strings.Join(parts, ";")
}

// pesReclaims lists the states a command in [call, ret] may see: any permit whose deadline may have passed
// may already have been reclaimed (lazily, by someone's clock) or not.
func pesReclaims(s PESState, ret int64) []PESState {
	out := []PESState{s}
	for _, p := range parseHeld(s.Held) {
		if p.lo >= ret {
			continue
		}
		var more []PESState
		for _, c := range out {
			var kept []permit
			for _, q := range parseHeld(c.Held) {
				if q.id != p.id {
					kept = append(kept, q)
				}
			}
			more = append(more, PESState{Set: c.Set, Avail: c.Avail + 1, Held: heldString(kept)})
		}
		out = append(out, more...)
	}
	return out
}

func pesApply(s PESState, in Command, out Reply) (PESState, bool) {
	held := parseHeld(s.Held)
	find := func() int {
		for i, p := range held {
			if p.id == in.Owner {
				return i
			}
		}
		return -1
	}
	switch in.F {
	case "setPermits":
		if out.Outcome == Refused {
			return s, s.Set
		}
		return PESState{Set: true, Avail: in.N}, !s.Set
	case "acquire":
		if out.Outcome == Refused {
			return s, s.Avail < 1
		}
		if s.Avail < 1 {
			return s, false
		}
		p := permit{id: in.Owner, lo: math.MaxInt64, hi: math.MaxInt64}
		if in.Lease > 0 {
			e := Epsilon(in.Lease)
			p.lo, p.hi = in.Call+in.Lease-e, satAdd(satAdd(in.Return, in.Lease), e)
		}
		s.Avail--
		s.Held = heldString(append(held, p))
		return s, true
	case "release":
		i := find()
		if i < 0 {
			return s, out.Outcome != Applied // not issued or already reclaimed: replies 0
		}
		p := held[i]
		s.Avail++
		s.Held = heldString(append(held[:i:i], held[i+1:]...))
		if out.Outcome == Applied {
			return s, p.hi > in.Call // 1 only for a permit that may still be live
		}
		return s, out.Outcome == Unsure || p.lo < in.Return // 0 for a held permit only if it may have lapsed
	case "available":
		return s, out.Outcome != Applied || out.Value == s.Avail
	}
	return s, false
}

// PESModel is RPermitExpirableSemaphore, partitioned by key: permits by id, each with a lease after which
// any command may have reclaimed it; a release of a lapsed permit replies 0 but still returns it.
var PESModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{PESState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		in, out := input.(Command), output.(Reply)
		var next []interface{}
		if out.Outcome == Unsure {
			next = append(next, state) // it did not run: unchanged (as in mutexStep)
		}
		by := in.Return
		if in.Now > 0 {
			by = min(by, in.Now)
		}
		if in.API && in.F == "release" && out.Outcome == Refused {
			// A worker's "not released" (API level) only tests: the permit is not issued, or may have
			// lapsed, and then any later command may reclaim it (pesReclaims) as Redisson's next script
			// does. Changing nothing, it is a guard of the search (frontier.go): a burst of lapsed
			// permits' releases at the end of a run no longer multiplies the orders.
			for _, p := range parseHeld(state.(PESState).Held) {
				if p.id == in.Owner && p.lo >= by {
					return nil
				}
			}
			return []interface{}{state}
		}
		for _, c := range pesReclaims(state.(PESState), by) {
			if a, ok := pesApply(c, in, out); ok && (out.Outcome != Unsure || a != state) {
				next = append(next, a)
			}
		}
		return next
	},
	Hash: func(state interface{}) uint64 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%+v", state.(PESState))
		return h.Sum64()
	},
	Partition:         partitionByCommandKey,
	DescribeOperation: describeCommand,
	DescribeState: func(state interface{}) string {
		s := state.(PESState)
		return html.EscapeString(fmt.Sprintf("%d available, %d issued", s.Avail, len(parseHeld(s.Held))))
	},
}
