package checker

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The frontier search decides one key's history by sweeping its call and return events in time order and
// keeping every configuration the lock may be in: a model state together with the set of commands in
// flight that have already taken effect. At a command's return, each configuration is extended by letting
// in-flight commands take effect, in every order the model allows, until that command has; configurations
// where it cannot are dropped, and none left means no legal order exists. This is the breadth-first
// just-in-time linearization of Lowe ("Testing for linearizability", 2017), exact like porcupine's
// depth-first search, but its cost grows with the commands in flight at one moment, not with the length
// of the history: porcupine's memo of (linearized set, state) must exhaust every interleaving of a long
// history before it can say illegal, and gives up on failover histories full of unknown outcomes. Here
// the history is cut implicitly at every moment: what came before is summed up by the configurations.

// maxInFlight bounds the commands in flight on one key at one moment (a bit each in a configuration).
const maxInFlight = 64

// maxConfigs bounds the configurations explored at one return; beyond it the search says why it stopped.
const maxConfigs = 1 << 20

// quickConfigs is the first, small bound (decideKey): a key whose commands overlap widely needs more only
// where porcupine's depth-first search is likely to find a legal order at once.
const quickConfigs = 1 << 14

type config struct {
	state interface{}
	done  uint64 // in-flight slots that have taken effect
}

// keyVerdict is the frontier search's answer for one key.
type keyVerdict struct {
	res porcupine.CheckResult
	// For Illegal: the command that cannot take effect, the states before, and the commands in flight.
	culprit  porcupine.Operation
	before   []interface{}
	inFlight []porcupine.Operation
	// For Ok: a legal order of the operations (indices), which anyone can check without this search.
	order []int
	// For Unknown: why the search stopped.
	why string
	// Largest number of commands in flight, and of configurations kept, seen on the key.
	maxInFlight, maxConfigs int
	// For Unknown: the search stopped at its bound of configurations (not at its time).
	wide bool
}

type event struct {
	t    int64
	ret  bool
	op   int
	seq  int
	slot int
}

// frontierKey decides one key's operations with the model. ctx bounds it: a cancelled search is Unknown.
func frontierKey(ctx context.Context, m porcupine.NondeterministicModel, ops []porcupine.Operation) keyVerdict {
	return frontierBounded(ctx, m, ops, maxConfigs)
}

// frontierBounded is frontierKey with bound configurations at one return.
func frontierBounded(ctx context.Context, m porcupine.NondeterministicModel, ops []porcupine.Operation, bound int) keyVerdict {
	init := m.Init()
	for _, s := range init {
		if !reflect.TypeOf(s).Comparable() {
			return keyVerdict{res: porcupine.Unknown, why: fmt.Sprintf("the model's state %T cannot be compared", s)}
		}
	}
	evs := make([]event, 0, 2*len(ops))
	for i, o := range ops {
		evs = append(evs, event{t: o.Call, op: i, seq: i}, event{t: o.Return, ret: true, op: i, seq: i})
	}
	// Porcupine's order: by time, a call before a return at the same time (intervals are closed).
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if a.t != b.t {
			return a.t < b.t
		}
		return !a.ret && b.ret
	})
	// A command of unbounded unknown outcome leaves a grant pending (MutexState.Pend) that the next
	// command placed bounds, refusals included: then a refusal does change the state, and is no guard.
	unbounded := false
	for _, o := range ops {
		unbounded = unbounded || o.Return == math.MaxInt64
	}
	var (
		v      keyVerdict
		slotOf = make([]int, len(ops))
		live   uint64 // occupied slots
		def    uint64 // occupied slots of deferrable operations
		guards uint64 // occupied slots of guards
		opAt   [maxInFlight]int
		cur    = antichain{}
		// next and seen are cleared at each return rather than made anew: two maps per return were 0.8 GB
		// of garbage for a million commands.
		next, seen antichain
		queue      []witnessed // the configurations to expand at one return, in order
	)
	for _, s := range init {
		cur.add(config{state: s}, 0, nil)
	}
	for n, e := range evs {
		if n%64 == 0 && ctx.Err() != nil {
			v.res, v.why = porcupine.Unknown, fmt.Sprintf("the search ran out of time at %s", Secs(e.t))
			return v
		}
		if !e.ret {
			if live == math.MaxUint64 {
				v.res = porcupine.Unknown
				v.why = fmt.Sprintf("more than %d commands in flight at once at %s", maxInFlight, Secs(e.t))
				return v
			}
			k := bits.TrailingZeros64(^live)
			live |= 1 << k
			if deferrable(ops[e.op]) {
				def |= 1 << k
			}
			if guard(ops[e.op]) && !unbounded {
				guards |= 1 << k
			}
			slotOf[e.op], opAt[k] = k, e.op
			v.maxInFlight = max(v.maxInFlight, bits.OnesCount64(live))
			continue
		}
		k := slotOf[e.op]
		next.reset()
		seen.reset()
		broken, late := false, false
		calls := 0
		// Breadth first: a configuration with fewer commands done is reached before those it makes
		// redundant (antichain), so they are never explored. Depth first explored the larger ones first
		// and then again from each smaller one found later: 27 million expansions for 83 commands after
		// a kill, where each return kept at most 346 configurations.
		queue = queue[:0]
		for _, c := range cur.all() {
			queue = append(queue, witnessed{c.config, c.w})
		}
		// push queues c unless seen already covers it (it would be skipped when taken; the set's cover only
		// grows): the same configuration reached from many parents before its turn is queued once.
		push := func(c config, op int, w *placed) {
			if !seen.covers(c, def) {
				queue = append(queue, witnessed{c, &placed{op, w}})
			}
		}
		expand := func(c config, w *placed) bool {
			// One return can take long to expand (many commands in flight): the bound must hold inside it
			// too, not only between events, or a check runs far past --check-timeout.
			if calls++; calls%1024 == 0 && ctx.Err() != nil {
				late = true
				return false
			}
			if !seen.add(c, def, nil) {
				return true // it, or a configuration with fewer unknown outcomes done, was explored
			}
			if seen.n > bound {
				return false
			}
			if c.done&(1<<k) != 0 { // it took effect earlier: what follows may as well come after its return
				next.add(config{state: c.state, done: c.done &^ (1 << k)}, def, w)
				return true
			}
			for free := guards &^ c.done; free != 0; free &= free - 1 {
				j := bits.TrailingZeros64(free)
				o := ops[opAt[j]]
				if !contains(m.Step(c.state, o.Input, o.Output), c.state) {
					continue
				}
				// A guard that holds now may as well be placed now: in any order that places it later,
				// it left the state as it was there too, so taking it out and putting it here changes
				// nothing else. This keeps the refusals in flight from multiplying the configurations.
				if j == k {
					next.add(config{state: c.state, done: c.done}, def, &placed{opAt[j], w})
					return true
				}
				push(config{state: c.state, done: c.done | 1<<j}, opAt[j], w)
				return true
			}
			for free := live &^ c.done; free != 0; free &= free - 1 {
				j := bits.TrailingZeros64(free)
				o := ops[opAt[j]]
				in := o.Input
				if a, ok := in.(Command); ok && a.API {
					a.Now, in = e.t, a // it takes effect before the return being expanded
				}
				steps := m.Step(c.state, in, o.Output)
				if j == k && def&(1<<j) != 0 && !contains(steps, c.state) {
					broken = true // the model broke the rule deferring relies on: say so rather than guess
					return false
				}
				for _, s := range steps {
					if j == k { // it took effect: it is done, and its slot frees
						next.add(config{state: s, done: c.done}, def, &placed{opAt[j], w})
						continue
					}
					if s == c.state && def&(1<<j) != 0 {
						// Leaving the state as it is, it may as well take effect at its return: that path
						// is explored then, from every state reached meanwhile. Skipping it here is what
						// keeps a burst of unknown outcomes from doubling the configurations each.
						continue
					}
					push(config{state: s, done: c.done | 1<<j}, opAt[j], w)
				}
			}
			return true
		}
		for i := 0; i < len(queue); i++ {
			if expand(queue[i].config, queue[i].w) {
				continue
			}
			switch {
			case late:
				v.res, v.why = porcupine.Unknown, fmt.Sprintf("the search ran out of time at %s", Secs(e.t))
			case broken:
				v.res = porcupine.Unknown
				v.why = fmt.Sprintf("the model changed the state for a command of unknown outcome that did not run, at %s", Secs(e.t))
			default:
				v.res, v.wide = porcupine.Unknown, true
				v.why = fmt.Sprintf("over %d configurations at %s (%d commands in flight)", bound, Secs(e.t),
					bits.OnesCount64(live))
			}
			return v
		}
		v.maxConfigs = max(v.maxConfigs, seen.n)
		if next.n == 0 {
			v.res, v.culprit = porcupine.Illegal, ops[e.op]
			for _, c := range cur.all() {
				v.before = append(v.before, c.state)
			}
			for free := live &^ (1 << k); free != 0; free &= free - 1 {
				v.inFlight = append(v.inFlight, ops[opAt[bits.TrailingZeros64(free)]])
			}
			return v
		}
		// The freed slot k is clear in next.
		live &^= 1 << k
		def &^= 1 << k
		guards &^= 1 << k
		cur, next = next, cur // the old cur is cleared for reuse at the next return
	}
	v.res = porcupine.Ok
	if all := cur.all(); len(all) > 0 {
		for w := all[0].w; w != nil; w = w.prev {
			v.order = append(v.order, w.op)
		}
		slices.Reverse(v.order)
	}
	return v
}

// describeStates names the distinct states for people, sorted so that reports are stable.
func describeStates(m porcupine.NondeterministicModel, states []interface{}) string {
	set := map[string]bool{}
	for _, s := range states {
		set[unescape(m.DescribeState(s))] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, " or ")
}

// deferrable reports whether an operation may be left in flight when it would leave the state unchanged:
// one of unknown outcome, whose step always includes the state as it was (it did not run). Every model
// here keeps that rule; the search checks it at the operation's return and gives up if it is broken.
func deferrable(o porcupine.Operation) bool {
	r, ok := o.Output.(Reply)
	return ok && r.Outcome == Unsure
}

func contains(states []interface{}, s interface{}) bool {
	for _, t := range states {
		if t == s {
			return true
		}
	}
	return false
}

// antichain is a set of configurations that keeps only the least done: (s, D) makes (s, D ∪ U) redundant
// when every operation in U is deferrable, since from (s, D) each of them can take effect at once,
// leaving s, and reach (s, D ∪ U). A failover's burst of unknown grants, each maybe applied and then lost
// with the unacknowledged write, otherwise leaves the same state with every subset of them done.
type antichain struct {
	m map[config][]member // by state and done non-deferrable slots
	n int
}

// member is one configuration of an antichain group: its deferrable done slots, and the order that led
// to it.
type member struct {
	d uint64
	w *placed
}

// placed is a legal order, newest first: the witness of a configuration, shared between configurations.
type placed struct {
	op   int
	prev *placed
}

type witnessed struct {
	config
	w *placed
}

// add inserts c, reached by order w, unless a configuration in the set makes it redundant; def is the
// deferrable slots.
func (a *antichain) add(c config, def uint64, w *placed) bool {
	if a.m == nil {
		a.m = map[config][]member{}
	}
	if a.covers(c, def) {
		return false
	}
	g, d := config{state: c.state, done: c.done &^ def}, c.done&def
	list := a.m[g]
	kept := list[:0]
	for _, e := range list {
		if d&^e.d != 0 {
			kept = append(kept, e)
		}
	}
	a.n -= len(list) - len(kept)
	a.m[g] = append(kept, member{d, w})
	a.n++
	return true
}

// covers reports whether a configuration in the set makes c redundant; def is the deferrable slots.
func (a *antichain) covers(c config, def uint64) bool {
	d := c.done & def
	for _, e := range a.m[config{state: c.state, done: c.done &^ def}] {
		if e.d&^d == 0 {
			return true
		}
	}
	return false
}

// reset empties the set, keeping its map for reuse.
func (a *antichain) reset() {
	clear(a.m)
	a.n = 0
}

func (a *antichain) all() []witnessed {
	out := make([]witnessed, 0, a.n)
	for g, ms := range a.m {
		for _, e := range ms {
			out = append(out, witnessed{config{state: g.state, done: g.done | e.d}, e.w})
		}
	}
	return out
}

// guard reports whether an operation only tests the state: at every state its step either is illegal or
// leaves the state as it was. A refused acquire is one (but not the fair lock's, which may refuse a free
// lock and so sees an expiry, nor a split Redlock vote's), where no command's outcome is unknown without bound.
// TestGuardsOnlyTest checks this against every model.
func guard(o porcupine.Operation) bool {
	in, ok1 := o.Input.(Command)
	r, ok2 := o.Output.(Reply)
	return ok1 && ok2 && (r.Outcome == Refused && (in.F == "acquire" && !in.Fair && !in.Split && !in.Replay ||
		in.API && in.F == "release" && in.N == 0) || // an expirable permit's "not released" (PESModel)
		in.API && in.F == "await" && r.Outcome != Unsure) // a latch's await reads the count (LatchModel)
}

// LegalOrder runs the frontier search on one key's operations and, when they have a legal order,
// returns one (indices into ops): a witness that CheckOrder verifies step by step, independently.
func LegalOrder(ctx context.Context, m porcupine.NondeterministicModel, ops []porcupine.Operation) (porcupine.CheckResult, []int) {
	v := frontierKey(ctx, m, ops)
	return v.res, v.order
}

// CheckOrder verifies that order is a legal order of ops under m: every operation once, none placed
// before one that returned before it was called, and the model accepting each step.
func CheckOrder(m porcupine.NondeterministicModel, ops []porcupine.Operation, order []int) error {
	if len(order) != len(ops) {
		return fmt.Errorf("order has %d operations of %d", len(order), len(ops))
	}
	seen := make([]bool, len(ops))
	latestCall := int64(math.MinInt64)
	states := m.Init()
	for n, i := range order {
		if i < 0 || i >= len(ops) || seen[i] {
			return fmt.Errorf("position %d: operation %d repeated or out of range", n, i)
		}
		seen[i] = true
		// An operation placed earlier that was called after this one returned breaks real-time order.
		if ops[i].Return < latestCall {
			return fmt.Errorf("position %d: %s returned before an earlier-placed operation was called", n,
				m.DescribeOperation(ops[i].Input, ops[i].Output))
		}
		latestCall = max(latestCall, ops[i].Call)
		var next []interface{}
		dup := map[interface{}]bool{} // states are comparable (frontierKey requires it)
		for _, s := range states {
			for _, t := range m.Step(s, ops[i].Input, ops[i].Output) {
				if !dup[t] {
					dup[t] = true
					next = append(next, t)
				}
			}
		}
		if len(next) == 0 {
			return fmt.Errorf("position %d: the model refuses %s", n, m.DescribeOperation(ops[i].Input, ops[i].Output))
		}
		states = next
	}
	return nil
}
