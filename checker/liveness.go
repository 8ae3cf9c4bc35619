package checker

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The liveness checkers judge what the application saw (its tryLock and unlock calls, Src ""), not the lock
// commands: a waiter's grant is the moment its tryLock returned. That is what a hung waiter costs its user,
// and a reply delayed by more than the bounds below would itself have timed out (--timeout) and been
// recorded as unknown. They run only when asked (--check liveness): a liveness bound is a promise some locks
// never make (a polling lock under contention may starve one client by design).

// hold is one acquisition as the application saw it, per key and thread.
type hold struct {
	key    string
	client string
	thread int64
	grant  int64 // its tryLock returned (granted)
	lease  int64 // ns: the lease it asked for, or the watchdog's timeout
	leased bool  // it asked for a lease (no watchdog)
	// free is when the lock was surely free again: its unlock returned, or its lease surely ran out;
	// math.MaxInt64 when neither is known (a watchdog hold whose unlock failed keeps renewing).
	free int64
	how  string // how it ended, for people
}

// try is one tryLock call (not a nested one), granted or not.
type try struct {
	client     string
	thread     int64
	inv, ret   int64 // ret: math.MaxInt64 when it never completed
	ok         bool
	wait       int64
	unknownOut bool
}

// liveView is one key's acquisitions, waits and the spans in which nothing can be decided.
type liveView struct {
	key   string
	holds []hold
	tries []try
	// murky spans: an unknown outcome may have taken (or kept) the lock there without the history saying.
	murky [][2]int64
}

// liveSettings returns the run's per-command timeout and watchdog timeout (Redisson's defaults when the
// history does not say).
func liveSettings(h *history.History) (timeout, watchdog int64) {
	run := factsOf(h)
	return run.timeout, run.watchdog
}

// freezes are the faults that freeze a client whole (its watchdog too): client-pause at its next grant,
// client-stall at once.
var freezes = map[string]bool{"client-pause": true, "client-stall": true}

// pauses maps a client to the spans in which it was surely frozen (freezes): from its freeze (the
// "frozen" record of an armed pause, else the start) to the stop.
func pauses(h *history.History) map[string][][2]int64 {
	out := map[string][][2]int64{}
	frozen := map[string][]int64{}
	for _, f := range h.Faults {
		if f.F == "client-pause" && f.Phase == "frozen" && len(f.Targets) > 0 {
			frozen[f.Targets[0]] = append(frozen[f.Targets[0]], f.Time)
		}
	}
	for _, ts := range frozen {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	}
	for _, w := range h.Windows() {
		if !freezes[w.Kind] {
			continue
		}
		for _, c := range w.Targets {
			from := w.Start
			if strings.HasPrefix(w.Detail, "armed") {
				from = math.MaxInt64 // armed only: frozen when (if) its frozen record says so
				fs := frozen[c]      // in time order: found, not scanned, for each of many windows
				if i := sort.Search(len(fs), func(i int) bool { return fs[i] >= w.Start }); i < len(fs) && fs[i] <= w.End {
					from = fs[i]
				}
			}
			if from < w.End {
				out[c] = append(out[c], [2]int64{from, w.End})
			}
		}
	}
	return out
}

// liveViews reads the application's calls, per key.
func liveViews(h *history.History) []*liveView {
	timeout, watchdog := liveSettings(h)
	paused := pauses(h)
	for c, ps := range paused { // only a freeze longer than --timeout can end a hold (expiry): the rest are left
		long := ps[:0]
		for _, p := range ps {
			if p[1]-p[0] >= timeout {
				long = append(long, p)
			}
		}
		sort.Slice(long, func(i, j int) bool { return long[i][0] < long[j][0] })
		paused[c] = long
	}
	byKey := map[string]*liveView{}
	var keys []string
	type thr struct {
		key, client string
		thread      int64
	}
	seq := map[thr][]history.Operation{}
	var order []thr
	var renewals []history.Operation // renewals and extends, by any of a client's threads (its watchdog's)
	for _, o := range h.Ops {
		inv := o.Invoke
		if inv.F == "renew" || inv.F == "extend" { // the client's or, for a worker, the wire's
			renewals = append(renewals, o)
			continue
		}
		if inv.Src != "" || (inv.F != "tryLock" && inv.F != "unlock") {
			continue
		}
		k := thr{inv.Key, inv.Client, inv.Thread}
		if seq[k] == nil {
			order = append(order, k)
		}
		seq[k] = append(seq[k], o)
		if byKey[inv.Key] == nil {
			byKey[inv.Key] = &liveView{key: inv.Key}
			keys = append(keys, inv.Key)
		}
	}
	for _, k := range order {
		v := byKey[k.key]
		var open *hold
		var lastSet int64 // when the open hold's lease was last set (its grant, a nested grant)
		closeAt := func(free int64, how string) {
			if open != nil {
				open.free, open.how = free, how
				v.holds = append(v.holds, *open)
				open = nil
			}
		}
		for _, o := range seq[k] {
			inv, c := o.Invoke, o.Complete
			nested := inv.Args["nested"] != 0
			lease := inv.Args["lease_ms"] * int64(time.Millisecond)
			if lease <= 0 {
				lease = watchdog
			}
			ret := int64(math.MaxInt64)
			if c != nil {
				ret = c.Time
			}
			unknown := o.Outcome() == history.Unknown
			if unknown && inv.F == "tryLock" || unknown && inv.F == "unlock" && !nested {
				// It may hold (or have released, or kept) the lock unseen: nothing is decided from its call
				// until a lease after it could have taken effect, or ever under a watchdog.
				end := int64(math.MaxInt64)
				if inv.Args["lease_ms"] > 0 && ret != math.MaxInt64 {
					end = ret + int64(unknownSlack) + lease + Epsilon(lease)
				}
				v.murky = append(v.murky, [2]int64{inv.Time, end})
			}
			switch {
			case inv.F == "tryLock" && !nested:
				v.tries = append(v.tries, try{client: k.client, thread: k.thread, inv: inv.Time, ret: ret,
					ok: o.Outcome() == history.Ok, wait: inv.Args["wait_ms"] * int64(time.Millisecond), unknownOut: unknown})
				if o.Outcome() == history.Ok {
					closeAt(ret, "a new grant to the same thread") // cannot happen in a sane history
					open = &hold{key: k.key, client: k.client, thread: k.thread, grant: ret, lease: lease, leased: inv.Args["lease_ms"] > 0,
						free: math.MaxInt64}
					lastSet = ret
				}
			case inv.F == "tryLock" && o.Outcome() == history.Ok && open != nil:
				lastSet = ret // a nested grant sets the lease again
			case inv.F == "unlock" && !nested && open != nil:
				// A proven expiry wins over what the unlock says later (Redisson's fair unlock answers 1
				// for a lock already gone).
				t, how := expiry(open, lastSet, paused[k.client], timeout, renewals)
				switch {
				case t < ret:
					closeAt(t, how)
				case o.Outcome() == history.Ok:
					closeAt(ret, fmt.Sprintf("%s released it at %s", k.client, Secs(ret)))
				case o.Outcome() == history.Fail && c.Value != nil && *c.Value == -1:
					closeAt(ret, fmt.Sprintf("%s's unlock at %s found it already gone", k.client, Secs(ret)))
				default:
					closeAt(t, how)
				}
			}
		}
		if open != nil {
			closeAt(expiry(open, lastSet, paused[k.client], timeout, renewals))
		}
	}
	var out []*liveView
	for _, k := range keys {
		v := byKey[k]
		sort.Slice(v.holds, func(i, j int) bool { return v.holds[i].grant < v.holds[j].grant })
		sort.Slice(v.tries, func(i, j int) bool { return v.tries[i].inv < v.tries[j].inv })
		out = append(out, v)
	}
	return out
}

// expiry is when a hold that was not seen released surely ended: its lease after it was last set, or,
// under a watchdog, the watchdog's timeout after its client froze (a renewal already sent when it froze
// lands within --timeout), if the client stayed frozen that long.
func expiry(o *hold, lastSet int64, paused [][2]int64, timeout int64, renewals []history.Operation) (int64, string) {
	if o.leased {
		for _, r := range renewals { // an extend moves the lease; one of unknown outcome leaves it unproven
			if r.Invoke.Client != o.client || r.Invoke.Key != o.key || r.Invoke.Time < o.grant {
				continue
			}
			if r.Outcome() != history.Ok && r.Outcome() != history.Fail {
				return math.MaxInt64, ""
			}
			if r.Outcome() == history.Ok {
				lastSet = max(lastSet, r.Complete.Time)
			}
		}
		t := lastSet + o.lease + Epsilon(o.lease)
		return t, fmt.Sprintf("%s's lease of %s, set at %s, ran out by %s", o.client, time.Duration(o.lease), Secs(lastSet), Secs(t))
	}
	first := sort.Search(len(paused), func(i int) bool { return paused[i][0] >= o.grant }) // paused is in order
	for _, p := range paused[first:] {
		t := p[0] + timeout + o.lease + Epsilon(o.lease)
		if p[0] >= o.grant && t <= p[1] && !renewedIn(renewals, o, p[0]+timeout, t) {
			return t, fmt.Sprintf("%s froze at %s holding it, so its watchdog (%s) stopped and the lease ran out by %s",
				o.client, Secs(p[0]), time.Duration(o.lease), Secs(t))
		}
	}
	return math.MaxInt64, ""
}

// renewedIn reports whether o's client sent a renewal of o's key in (from, to]: then its freeze did not
// stop its watchdog (a worker frozen only at the gate, as before the driver stopped its process there).
func renewedIn(renewals []history.Operation, o *hold, from, to int64) bool {
	for _, r := range renewals {
		if r.Invoke.Client == o.client && r.Invoke.Key == o.key && r.Invoke.Time > from && r.Invoke.Time <= to {
			return true
		}
	}
	return false
}

// heldAt reports whether some hold may be in force at t.
func (v *liveView) heldAt(t int64) bool {
	for _, x := range v.holds {
		if x.grant <= t && t < x.free {
			return true
		}
	}
	return false
}

// murkyIn reports whether an unknown outcome clouds [from, to].
func (v *liveView) murkyIn(from, to int64) bool {
	for _, m := range v.murky {
		if m[0] <= to && from < m[1] {
			return true
		}
	}
	return false
}

// nextGrant is the first grant the application saw after t (math.MaxInt64: none).
func (v *liveView) nextGrant(t int64) (int64, string) {
	for _, x := range v.holds {
		if x.grant > t {
			return x.grant, x.client
		}
	}
	return math.MaxInt64, ""
}

// faultsIn lists the fault windows overlapping [from, to], other than a freeze of the client named ok.
func faultsIn(ws []history.Window, from, to int64, ok string) []history.Window {
	var out []history.Window
	for _, w := range ws {
		if w.Start > to || w.End < from {
			continue
		}
		if freezes[w.Kind] && len(w.Targets) == 1 && w.Targets[0] == ok {
			continue
		}
		out = append(out, w)
	}
	return out
}

// liveMargin is ε of the liveness bounds: one command timeout for the waiter's retry to go and come back,
// and one for the wake-up (a PUBLISH, a poll) to reach a client busy on a loaded machine. A reply later
// than --timeout is an unknown outcome, not a grant, so two timeouts cover any healthy wake-up.
func liveMargin(timeout int64) int64 { return 2 * timeout }

// SlowWakeup looks for a waiter left waiting after the lock became free: the lock surely free from F (its
// holder's unlock returned, or the holder's lease surely ran out: a lease that lapsed, a watchdog whose client
// froze), a tryLock already waiting at F, and no grant to anyone for longer than the holder's lease plus ε
// after F. A correct waiter is woken by the release's message or, if that is lost, retries within the ttl it
// was told, which is at most the lease; ε (liveMargin) is two command timeouts. A fault other than the
// holder's own pause, or an unknown outcome, in the span makes that case undecided (unknown).
type SlowWakeup struct{}

// Name is the checker's stable name.
func (SlowWakeup) Name() string { return "slow-wakeup" }

// Wake is one slow wake-up: the lock free from Free, Waiter waiting since Since, first grant at Granted.
type Wake struct {
	Key     string `json:"key"`
	Waiter  string `json:"waiter"`
	Since   int64  `json:"waiting_since_ns"`
	Free    int64  `json:"free_ns"`
	How     string `json:"how"`
	Bound   int64  `json:"bound_ns"`
	Granted int64  `json:"next_grant_ns"` // math.MaxInt64: none until the waiter gave up or the run ended
	To      string `json:"next_grant_to,omitempty"`
	Until   int64  `json:"waited_until_ns"`
	Note    string `json:"undecided,omitempty"`
}

// Check finds each free moment with a waiter and measures how long the lock then stayed free.
func (SlowWakeup) Check(_ context.Context, h *history.History) Result {
	timeout, _ := liveSettings(h)
	ws := h.Windows()
	var found, undecided []Wake
	for _, v := range liveViews(h) {
		for _, x := range v.holds {
			F := x.free
			if F == math.MaxInt64 || v.heldAt(F) {
				continue
			}
			bound := F + x.lease + liveMargin(timeout)
			next, to := v.nextGrant(F)
			if next <= bound {
				continue
			}
			for _, t := range v.tries {
				if t.inv > F || t.ret <= bound || t.client == x.client && t.thread == x.thread {
					continue
				}
				w := Wake{Key: v.key, Waiter: t.client, Since: t.inv, Free: F, How: x.how, Bound: bound,
					Granted: next, To: to, Until: min(t.ret, next)}
				if fs := faultsIn(ws, t.inv, bound, x.client); len(fs) > 0 {
					w.Note = fmt.Sprintf("%s on %v at %s", fs[0].Kind, fs[0].Targets, Secs(fs[0].Start))
				} else if v.murkyIn(t.inv, bound) {
					w.Note = "an unknown outcome could hold the lock unseen"
				}
				if w.Note != "" {
					undecided = append(undecided, w)
				} else {
					found = append(found, w)
				}
				break // one waiter per free moment is proof enough
			}
		}
	}
	if len(found) > 0 {
		sort.Slice(found, func(i, j int) bool { return found[i].Free < found[j].Free })
		w := found[0]
		end := "the waiter gave up or the run ended first"
		if w.Granted != math.MaxInt64 {
			end = fmt.Sprintf("the next grant went to %s at %s", w.To, Secs(w.Granted))
		}
		return Result{Valid: Invalid,
			Summary: fmt.Sprintf("%d time(s) a waiter was left waiting on a free lock past the holder's lease plus ε", len(found)),
			Violation: fmt.Sprintf("%s was free from %s (%s); %s, waiting since %s, was not granted by %s (the lease plus ε = %s) "+
				"and nobody else was: %s, %s after the lock became free",
				w.Key, Secs(w.Free), w.How, w.Waiter, Secs(w.Since), Secs(w.Bound), time.Duration(w.Bound-w.Free), end,
				time.Duration(w.Until-w.Free).Round(time.Millisecond)),
			At: w.Free, End: w.Until, Stall: w.Waiter + " waiting on a free lock", Details: found}
	}
	if len(undecided) > 0 {
		w := undecided[0]
		return Result{Valid: Unknown,
			Summary: fmt.Sprintf("%d waiter(s) waited on a free lock past its lease plus ε, each while something else was wrong", len(undecided)),
			Violation: fmt.Sprintf("%s was free from %s and %s waited until %s, but not decisively: %s",
				w.Key, Secs(w.Free), w.Waiter, Secs(w.Until), w.Note),
			At: w.Free, End: w.Until, Stall: w.Waiter + " waiting (undecided)", Details: undecided}
	}
	return Result{Valid: Valid, Summary: "every waiter on a free lock was woken within the holder's lease plus ε"}
}

// Starvation looks, after the last fault healed (and past every unknown outcome's reach), for a span longer
// than the longest lease plus ε in which the lock was free, clients kept trying (a tryLock in flight all
// along, allowing one command timeout between attempts) and nobody was granted. What the fault left
// behind (a lease, a fair lock's stale queue entry, which lasts as long as its waiter's wait) is gone
// after the longest lease (and, for the fair lock, the longest wait).
type Starvation struct {
	Fair bool // stale queue entries last as long as a waiter's wait
}

// Name is the checker's stable name.
func (Starvation) Name() string { return "starvation" }

// Starved is one span with clients trying and no grant.
type Starved struct {
	Key     string   `json:"key"`
	Healed  int64    `json:"healed_ns"`
	From    int64    `json:"from_ns"`
	To      int64    `json:"to_ns"`
	Bound   int64    `json:"bound_ns"`
	Clients []string `json:"clients"`
}

// Check scans each key's quiet tail.
func (s Starvation) Check(_ context.Context, h *history.History) Result {
	timeout, _ := liveSettings(h)
	healed := int64(0)
	for _, w := range h.Windows() {
		if !w.Healed {
			return Result{Valid: Unknown, Summary: fmt.Sprintf("a %s fault was never healed: nothing after it is decided", w.Kind)}
		}
		healed = max(healed, w.End)
	}
	end := h.End()
	var found []Starved
	for _, v := range liveViews(h) {
		longest := int64(0)
		for _, x := range v.holds {
			longest = max(longest, x.lease)
		}
		for _, t := range v.tries {
			if s.Fair {
				longest = max(longest, t.wait)
			}
		}
		from := healed
		for _, m := range v.murky {
			from = max(from, m[1])
		}
		if from == math.MaxInt64 {
			continue
		}
		bound := longest + liveMargin(timeout)
		starts := []int64{from}
		for _, x := range v.holds {
			if x.free > from && x.free != math.MaxInt64 {
				starts = append(starts, x.free)
			}
		}
		for _, a := range starts {
			if v.heldAt(a) {
				continue
			}
			next, _ := v.nextGrant(a)
			b := min(next, end)
			if b-a <= bound {
				continue
			}
			if who, ok := v.trying(a, a+bound, timeout); ok {
				found = append(found, Starved{Key: v.key, Healed: healed, From: a, To: b, Bound: bound, Clients: who})
				break
			}
		}
	}
	if len(found) == 0 {
		return Result{Valid: Valid, Summary: "after the last heal, clients trying for a free lock were granted within the longest lease plus ε"}
	}
	w := found[0]
	return Result{Valid: Invalid,
		Summary: fmt.Sprintf("%d key(s) starved after the last fault healed", len(found)),
		Violation: fmt.Sprintf("%s was free from %s (the last fault healed at %s) and %s kept trying, but nobody was granted until %s: "+
			"%s, longer than the longest lease plus ε (%s)", w.Key, Secs(w.From), Secs(w.Healed), strings.Join(w.Clients, ", "),
			Secs(w.To), time.Duration(w.To-w.From).Round(time.Millisecond), time.Duration(w.Bound)),
		At: w.From, End: w.To, Stall: "starved: no grant", Details: found}
}

// trying reports whether tryLock calls cover [from, to] (gaps shorter than gap allowed) and who made them.
func (v *liveView) trying(from, to, gap int64) ([]string, bool) {
	covered := from
	for _, t := range v.tries { // sorted by invoke
		if t.ret < covered || t.inv > to {
			continue
		}
		if t.inv > covered+gap {
			return nil, false
		}
		covered = max(covered, t.ret)
	}
	if covered < to {
		return nil, false
	}
	seen := map[string]bool{}
	var who []string
	for _, t := range v.tries {
		if t.inv <= to && t.ret >= from && !seen[t.client] {
			seen[t.client] = true
			who = append(who, t.client)
		}
	}
	return who, true
}
