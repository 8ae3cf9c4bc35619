package checker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// calls pairs each user-level call (f) with the lock commands its thread sent on its keys while it ran.
type call struct {
	op       history.Operation
	commands []history.Operation
}

func callsOf(h *history.History, f string, keys func(history.Call) []string) []call {
	type thread struct {
		client string
		thread int64
	}
	byThread := map[thread][]history.Operation{}
	for _, o := range h.Ops {
		if o.Invoke.Thread != 0 && o.Invoke.F != f {
			t := thread{o.Invoke.Client, o.Invoke.Thread}
			byThread[t] = append(byThread[t], o)
		}
	}
	var out []call
	for _, o := range h.Ops {
		if o.Invoke.F != f || o.Complete == nil {
			continue
		}
		want := map[string]bool{}
		for _, k := range keys(o.Invoke) {
			want[k] = true
		}
		c := call{op: o}
		for _, m := range byThread[thread{o.Invoke.Client, o.Invoke.Thread}] {
			if m.Invoke.Time >= o.Invoke.Time && m.Invoke.Time <= o.Complete.Time && want[m.Invoke.Key] {
				c.commands = append(c.commands, m)
			}
		}
		out = append(out, c)
	}
	return out
}

// Tokens checks a fenced lock's promise: on each key, a grant that begins after another ended carries a
// strictly larger token, and no two owners get the same token, however their calls overlap (in any order
// of two such grants the second's token is not larger: a failover that lost the counter's last INCR hands
// it out again to a call begun before the first grant was answered).
type Tokens struct{}

// Name is the checker's stable name.
func (Tokens) Name() string { return "fencing-tokens" }

// Check compares every grant with the largest token of the grants that completed before it began.
func (Tokens) Check(_ context.Context, h *history.History) Result {
	byKey := map[string][]history.Operation{}
	for _, o := range h.Ops {
		if o.Invoke.F == "acquire" && o.Outcome() == history.Ok && o.Complete.Value != nil {
			byKey[o.Invoke.Key] = append(byKey[o.Invoke.Key], o)
		}
	}
	grants, bad := 0, 0
	first := ""
	var at int64
	for key, gs := range byKey {
		done := append([]history.Operation(nil), gs...)
		sort.Slice(done, func(i, j int) bool { return done[i].Complete.Time < done[j].Complete.Time })
		sort.Slice(gs, func(i, j int) bool { return gs[i].Invoke.Time < gs[j].Invoke.Time })
		var top int64
		topBy, j := "", 0
		given := map[int64]history.Operation{} // token -> its first grant; one owner's grants answer to the rule above
		for _, g := range gs {
			for j < len(done) && done[j].Complete.Time < g.Invoke.Time {
				if v := *done[j].Complete.Value; topBy == "" || v > top {
					top, topBy = v, done[j].Invoke.Client
				}
				j++
			}
			grants++
			v := *g.Complete.Value
			o, seen := given[v]
			if !seen {
				given[v] = g
			}
			why := ""
			if topBy != "" && v <= top {
				why = fmt.Sprintf("after %s had already been given %d", topBy, top)
			} else if seen && o.Invoke.Owner != g.Invoke.Owner {
				why = fmt.Sprintf("which %s had been given at %s", o.Invoke.Client, Secs(o.Complete.Time))
			}
			if why != "" {
				bad++
				if first == "" || g.Complete.Time < at {
					first = fmt.Sprintf("%s got token %d on %s at %s, %s", g.Invoke.Client, v, key, Secs(g.Complete.Time), why)
					at = g.Complete.Time
				}
			}
		}
	}
	switch {
	case bad > 0:
		return Result{Valid: Invalid, Violation: first, At: at, End: at,
			Summary: fmt.Sprintf("%d of %d grants did not get a larger token", bad, grants)}
	case grants == 0:
		return Result{Valid: Unknown, Summary: "no grant carried a token"}
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf("%d grants, tokens strictly increasing on every key", grants)}
}

// Fairness checks the fair lock's promise: of two callers on one key, the one that surely joined the queue
// first (or was granted on arrival) is granted first, and is not passed over while it still waits.
type Fairness struct{}

// Name is the checker's stable name.
func (Fairness) Name() string { return "fifo" }

type waiter struct {
	client          string
	enqCall, enqRet int64 // the first refused acquire of the call
	grantCall       int64 // the granting acquire, or -1
	grantRet        int64
	end             int64 // when the call returned
	// since is the earliest the thread may have held the place it was granted from: an earlier call's
	// place survives until a grant or a dequeue that surely applied (one lost in a partition leaves it).
	since    int64
	mayQueue int64 // the first acquire that queued or may have (unknown), or -1
	left     bool  // a dequeue surely applied
	thread   int64
}

// Check pairs each call's first refusal (its place in the queue) with its grant.
func (Fairness) Check(_ context.Context, h *history.History) Result {
	byKey := map[string][]waiter{}
	for _, c := range callsOf(h, "tryLock", func(r history.Call) []string { return []string{r.Key} }) {
		if c.op.Invoke.Args["nested"] == 1 {
			continue
		}
		w := waiter{client: c.op.Invoke.Client, thread: c.op.Invoke.Thread, enqCall: -1, grantCall: -1,
			end: c.op.Complete.Time, mayQueue: -1}
		for _, m := range c.commands {
			if m.Invoke.F == "dequeue" && m.Outcome() == history.Ok {
				w.left = true
			}
			if m.Invoke.F != "acquire" {
				continue
			}
			if w.mayQueue < 0 && (m.Outcome() == history.Unknown || m.Complete.Value != nil) {
				w.mayQueue = m.Invoke.Time // refused (queued), or unknown (may have queued)
			}
			if m.Complete == nil {
				continue
			}
			if w.enqCall < 0 && m.Complete.Type == history.Fail && m.Complete.Value != nil {
				w.enqCall, w.enqRet = m.Invoke.Time, m.Complete.Time
			}
			if m.Complete.Type == history.Ok {
				w.grantCall, w.grantRet = m.Invoke.Time, m.Complete.Time
			}
		}
		if w.enqCall < 0 && w.grantCall >= 0 {
			w.enqCall, w.enqRet = w.grantCall, w.grantRet // granted at once: it arrived when it asked
		}
		byKey[c.op.Invoke.Key] = append(byKey[c.op.Invoke.Key], w)
	}
	for key, ws := range byKey {
		byKey[key] = carryPlaces(ws)
	}
	mayHold := mayStillHold(h)
	queued, bad := 0, 0
	first := ""
	var at, atEnd int64
	for key, ws := range byKey {
		queued += len(ws)
		// a surely arrived (queued, or was granted at once) before b asked; b was granted while a still waited.
		for _, a := range ws {
			for _, b := range ws {
				if a.client == b.client || a.enqRet >= b.since || b.grantCall < 0 {
					continue // only pairs where a surely queued before b, and b got the lock
				}
				if mayHold(key, b.client, b.thread, b.enqCall) {
					continue // b may have held the lock all along: its grant is a re-entry, which skips the queue
				}
				overtaken := (a.grantCall >= 0 && b.grantRet < a.grantCall) || (a.grantCall < 0 && b.grantRet < a.end)
				if overtaken {
					bad++
					// the earliest overtaking grant (keys are a map, calls in order of their ends)
					if first == "" || b.grantRet < atEnd || b.grantRet == atEnd && b.enqCall < at {
						first = fmt.Sprintf("%s queued for %s at %s, before %s arrived at %s, yet %s was granted at %s "+
							"while %s still waited", a.client, key, Secs(a.enqRet), b.client, Secs(b.enqCall), b.client,
							Secs(b.grantRet), a.client)
						at, atEnd = b.enqCall, b.grantRet
					}
				}
			}
		}
	}
	switch {
	case bad > 0:
		return Result{Valid: Invalid, Violation: first, At: at, End: atEnd,
			Summary: fmt.Sprintf("%d grants overtook an earlier waiter (of %d calls)", bad, queued)}
	case queued == 0:
		return Result{Valid: Unknown, Summary: "nobody ever queued, so order was never tested"}
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf("%d calls, granted in arrival order", queued)}
}

// mayStillHold reports whether a thread may hold a key's lock when it starts a call at t: it may from an
// acquire that was granted or of unknown outcome, until a release surely let go (answered 1: the lock is
// gone; or refused: not the holder). A release of unknown outcome, or one that answered 0 (a re-entrant
// count left), leaves the lock with the thread, and its next call is then granted as a re-entry (a
// partition,kill run of the fair lock: a holder's unlock lost in a kill, its next call re-entered the lock
// that AOF restored, ahead of the queue, 18 seeds of 20 flagged).
func mayStillHold(h *history.History) func(key, client string, thread, t int64) bool {
	type hold struct {
		key, client string
		thread      int64
	}
	type change struct {
		at   int64
		held bool
	}
	changes := map[hold][]change{}
	for _, o := range h.Ops {
		id := hold{o.Invoke.Key, o.Invoke.Client, o.Invoke.Thread}
		switch {
		case o.Invoke.F == "acquire" && o.Outcome() != history.Fail:
			changes[id] = append(changes[id], change{o.Invoke.Time, true}) // it may have taken effect at once
		case o.Invoke.F == "release" && o.Outcome() == history.Ok && o.Complete.Value != nil && *o.Complete.Value == 1,
			o.Invoke.F == "release" && o.Outcome() == history.Fail:
			changes[id] = append(changes[id], change{o.Complete.Time, false}) // surely applied by its answer
		}
	}
	for _, cs := range changes {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
	}
	return func(key, client string, thread, t int64) bool {
		cs := changes[hold{key, client, thread}]
		i := sort.Search(len(cs), func(i int) bool { return cs[i].at >= t })
		return i > 0 && cs[i-1].held
	}
}

// carryPlaces sets each waiter's since (a thread's calls in order: a place a call may have kept is the
// next calls' until one is granted or surely leaves) and drops the calls that never queued.
func carryPlaces(ws []waiter) []waiter {
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].end < ws[j].end })
	kept := map[string]int64{} // client/thread -> the place it may still hold
	var out []waiter
	for _, w := range ws {
		id := fmt.Sprintf("%s/%d", w.client, w.thread)
		place, ok := kept[id]
		w.since = w.enqCall
		if ok && (w.since < 0 || place < w.since) {
			w.since = place
		}
		switch {
		case w.grantCall >= 0 || w.left: // a grant takes the thread off the queue, and so does a dequeue
			delete(kept, id)
		case w.mayQueue >= 0 && !ok:
			kept[id] = w.mayQueue
		}
		if w.enqCall >= 0 {
			out = append(out, w)
		}
	}
	return out
}

// Group checks the multi lock's promise: when tryLock returns, the caller holds every key of its group
// (true) or none of them (false), never a strict subset.
type Group struct{}

// Name is the checker's stable name.
func (Group) Name() string { return "all-or-nothing" }

// Check replays each call's member commands to find what it held when it returned.
func (Group) Check(_ context.Context, h *history.History) Result {
	calls := callsOf(h, "tryLock", func(r history.Call) []string { return strings.Split(r.Key, ",") })
	checked, undecided, bad := 0, 0, 0
	first := ""
	var at, atEnd int64
	for _, c := range calls {
		if c.op.Outcome() == history.Unknown {
			undecided++
			continue
		}
		holds := map[string]int{}
		sure := true
		for _, m := range c.commands {
			switch {
			case m.Outcome() == history.Unknown:
				sure = false
			case m.Outcome() != history.Ok:
			case m.Invoke.F == "acquire":
				holds[m.Invoke.Key]++
			case m.Invoke.F == "release" && m.Complete.Value != nil && *m.Complete.Value == 1:
				holds[m.Invoke.Key] = 0
			case m.Invoke.F == "release":
				holds[m.Invoke.Key]--
			}
		}
		if !sure {
			undecided++
			continue
		}
		checked++
		keys := strings.Split(c.op.Invoke.Key, ",")
		var held []string
		for _, k := range keys {
			if holds[k] > 0 {
				held = append(held, k)
			}
		}
		ok := c.op.Outcome() == history.Ok
		if (ok && len(held) != len(keys)) || (!ok && len(held) > 0) {
			bad++
			if first == "" {
				first = fmt.Sprintf("%s's tryLock of {%s} returned %v at %s holding only {%s}", c.op.Invoke.Client,
					c.op.Invoke.Key, ok, Secs(c.op.Complete.Time), strings.Join(held, ","))
				at, atEnd = c.op.Invoke.Time, c.op.Complete.Time
			}
		}
	}
	switch {
	case bad > 0:
		return Result{Valid: Invalid, Violation: first, At: at, End: atEnd,
			Summary: fmt.Sprintf("%d of %d calls left a strict subset held", bad, checked)}
	case checked == 0:
		return Result{Valid: Unknown, Summary: fmt.Sprintf("no call could be decided (%d with unknown commands)", undecided)}
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf("%d calls held all or nothing (%d undecided)", checked, undecided)}
}

// Quiescence checks a semaphore at rest: the final read of each key sees the permits, less those that the
// permit commands before it took and did not give back. A command of unknown outcome may or may not have
// run, so it widens what the read may see (a permit taken whose reply was lost stays taken; a release lost
// leaves its permit held), and so does an expirable permit whose lease surely ended before the read. A
// command sent to a killed server and given up before it answered again never ran (downNodes).
type Quiescence struct{ Permits int64 }

// Name is the checker's stable name.
func (Quiescence) Name() string { return "permits-at-rest" }

// Check compares each key's last "available" read with the range the permit commands before it explain.
func (q Quiescence) Check(_ context.Context, h *history.History) Result {
	last := map[string]history.Operation{}
	worker := false
	for _, o := range h.Ops {
		// A worker's calls are lcp_<request> (clients/worker): its available read and permit calls count too.
		f := strings.TrimPrefix(o.Invoke.F, history.UnseenPrefix)
		worker = worker || f != o.Invoke.F
		if f == "available" && o.Outcome() == history.Ok {
			last[o.Invoke.Key] = o
		}
	}
	if len(last) == 0 {
		return Result{Valid: Unknown, Summary: "no final read of the permits"}
	}
	if worker {
		return q.checkCalls(h, last)
	}
	down := downNodes(h)
	type bounds struct{ lo, hi int64 }
	rng := map[string]*bounds{}
	for key := range last {
		rng[key] = &bounds{q.Permits, q.Permits}
	}
	unsure := 0
	for _, o := range h.Ops { // one pass: a history may hold many keys and a million commands
		read, ok := last[o.Invoke.Key]
		if !ok || o.Invoke.F != "acquire" && o.Invoke.F != "release" ||
			o.Outcome() == history.Fail || o.Invoke.Time >= read.Complete.Time {
			continue
		}
		r := rng[o.Invoke.Key]
		n := max(o.Invoke.Args["permits"], 1)
		if o.Invoke.F == "acquire" {
			n = -n
		}
		gaveUp := int64(math.MaxInt64) // no completion recorded: still pending
		if o.Complete != nil {
			gaveUp = o.Complete.Time
		}
		// Uncertain too: overlapping the read, or applied on a primary no replica acknowledged (a failover
		// may have undone it).
		maybe := o.Outcome() == history.Unknown || gaveUp > read.Invoke.Time || o.Complete.Args["nosync"] == 1
		switch {
		case o.Outcome() == history.Unknown && down(o.Invoke.Node, o.Invoke.Time, gaveUp):
			continue // never ran
		case o.Invoke.F == "release" && !maybe && (o.Complete.Value == nil || *o.Complete.Value == 0):
			continue // released nothing (an expired or unknown permit)
		case maybe:
			unsure++
			r.lo, r.hi = r.lo+min(n, 0), r.hi+max(n, 0)
		default:
			r.lo, r.hi = r.lo+n, r.hi+n
		}
		if lease := o.Invoke.Args["lease_ms"]; n < 0 && lease > 0 && o.Outcome() != history.Unknown &&
			satAdd(o.Complete.Time, lease*int64(time.Millisecond)) < read.Invoke.Time {
			r.hi -= n // its lease surely ended: the permit may be back
		}
	}
	if bad := atRest(last, func(key string, v int64) string {
		r := rng[key]
		if v >= r.lo && v <= r.hi {
			return ""
		}
		want := fmt.Sprint(r.lo)
		if r.hi != r.lo {
			want = fmt.Sprintf("between %d and %d", r.lo, r.hi)
		}
		return fmt.Sprintf("%s has %d available at rest, where its permit commands leave %s", key, v, want)
	}); bad.Valid == Invalid {
		return bad
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf(
		"the permits at rest on all %d keys are what the permit commands left (%d of uncertain outcome)", len(last), unsure)}
}

// atRest asks wrong of each key's final read (its available permits) in key order, and is Invalid, naming
// the first key found wrong and its read's time, when any is; Valid otherwise.
func atRest(last map[string]history.Operation, wrong func(key string, available int64) string) Result {
	var bad []string
	var at int64
	for _, key := range slices.Sorted(maps.Keys(last)) { // the first key named is the one whose time is given
		read := last[key]
		if why := wrong(key, *read.Complete.Value); why != "" {
			if bad == nil {
				at = read.Complete.Time
			}
			bad = append(bad, why)
		}
	}
	if len(bad) == 0 {
		return Result{Valid: Valid}
	}
	return Result{Valid: Invalid, Violation: bad[0], At: at, End: at,
		Summary: fmt.Sprintf("%d keys lost or gained permits", len(bad))}
}

// checkCalls judges a worker's semaphore, whose calls (lcp_*) stand for its lock commands: at rest every
// permit is back, unless a call of unknown outcome may have moved one.
func (q Quiescence) checkCalls(h *history.History, last map[string]history.Operation) Result {
	unknown := 0
	for _, o := range h.Ops {
		f := strings.TrimPrefix(o.Invoke.F, history.UnseenPrefix)
		if o.Outcome() == history.Unknown && (strings.HasPrefix(f, "acquire") || strings.HasPrefix(f, "release")) {
			unknown++
		}
	}
	bad := atRest(last, func(key string, v int64) string {
		if v == q.Permits {
			return ""
		}
		return fmt.Sprintf("%s has %d available at rest, not %d", key, v, q.Permits)
	})
	switch {
	case bad.Valid == Invalid && unknown > 0:
		return Result{Valid: Unknown, Summary: fmt.Sprintf("%s; %d commands had unknown outcomes", bad.Violation, unknown)}
	case bad.Valid == Invalid:
		return bad
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf("available + held = %d permits on all %d keys at rest", q.Permits,
		len(last))}
}

// latchCalls names a latch's calls as the emulation does, whichever recorded them.
var latchCalls = map[string]string{"setCount": "setCount", "countDown": "countDown", "await": "await",
	history.UnseenPrefix + "set_count": "setCount", history.UnseenPrefix + "count_down": "countDown"}

// LatchAwaits checks the latch's promise: no await returns open before count distinct countDowns were
// even sent, and the count never goes below zero.
type LatchAwaits struct{}

// Name is the checker's stable name.
func (LatchAwaits) Name() string { return "latch" }

// Check counts, for each successful await, the countDowns invoked before it returned.
func (LatchAwaits) Check(_ context.Context, h *history.History) Result {
	count := map[string]int64{}
	downs := map[string][]int64{}
	var awaits []history.Operation
	negative := ""
	var at int64
	for _, o := range h.Ops {
		// A worker's calls are lcp_set_count and lcp_count_down (clients/worker); its await is the workload's.
		switch latchCalls[o.Invoke.F] {
		case "setCount":
			if o.Outcome() == history.Ok {
				count[o.Invoke.Key] = o.Invoke.Args["count"]
			}
		case "countDown":
			if o.Outcome() != history.Fail {
				downs[o.Invoke.Key] = append(downs[o.Invoke.Key], o.Invoke.Time)
			}
			if o.Outcome() == history.Ok && o.Complete.Value != nil && *o.Complete.Value < 0 && negative == "" {
				negative = fmt.Sprintf("%s's countDown on %s at %s took the count to %d", o.Invoke.Client, o.Invoke.Key,
					Secs(o.Complete.Time), *o.Complete.Value)
				at = o.Complete.Time
			}
		case "await":
			if o.Outcome() == history.Ok {
				awaits = append(awaits, o)
			}
		}
	}
	bad := 0
	first := negative
	for _, a := range awaits {
		n, ok := count[a.Invoke.Key]
		if !ok {
			continue
		}
		sent := int64(0)
		for _, t := range downs[a.Invoke.Key] {
			if t < a.Complete.Time {
				sent++
			}
		}
		if sent < n {
			bad++
			if first == "" {
				first = fmt.Sprintf("%s's await on %s returned open at %s after only %d of %d countDowns", a.Invoke.Client,
					a.Invoke.Key, Secs(a.Complete.Time), sent, n)
				at = a.Complete.Time
			}
		}
	}
	switch {
	case bad > 0 || negative != "":
		return Result{Valid: Invalid, Violation: first, At: at, End: at,
			Summary: fmt.Sprintf("%d of %d awaits opened early", bad, len(awaits))}
	case len(awaits) == 0:
		return Result{Valid: Unknown, Summary: "no await returned open"}
	}
	return Result{Valid: Valid, Summary: fmt.Sprintf("%d awaits, none open before its count of countDowns", len(awaits))}
}
