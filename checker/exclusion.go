package checker

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// Exclusion checks, in real time, what a lock promises the application, from the protected resource's
// own records (which sit outside every fault): no two owners inside one key's critical section at once,
// except readers together; at most Capacity holders for a semaphore. A section ends at its exit or at the
// end of its validity window, whichever is first. With Fenced, an overlap is only a violation when the
// older holder's writes were not refused: a lease overrun that fencing caught is reported, not failed.
type Exclusion struct {
	Capacity int
	Fenced   bool
}

// Name is the checker's stable name.
func (Exclusion) Name() string { return "mutual-exclusion" }

// Overlap is two critical sections of different owners on one key that intersect in time.
type Overlap struct {
	Key           string `json:"key"`
	Holder        string `json:"holder"`
	Intruder      string `json:"intruder"`
	HolderOwner   string `json:"holder_owner"`
	IntruderOwner string `json:"intruder_owner"`
	HeldFrom      int64  `json:"held_from_ns"`
	HeldTo        int64  `json:"held_to_ns"`
	Entered       int64  `json:"entered_ns"`
	IntruderOut   int64  `json:"intruder_left_ns"`
	Fenced        bool   `json:"fenced,omitempty"` // the older holder's late write was refused
}

// EveryAcquireRefused says that every acquire the application tried failed with an error, quoting the first: a worker
// that refuses each request (error 10 for a lease its library cannot take) leaves no critical section, and
// the user must hear why. "" when some acquire was granted, refused as held, or not surely refused.
func EveryAcquireRefused(h *history.History) string {
	var first string
	n, texts := 0, map[string]bool{}
	for _, o := range h.Ops {
		inv := o.Invoke
		if inv.Src != "" || inv.F != "tryLock" && inv.F != "tryAcquire" || inv.Args["nested"] != 0 {
			continue
		}
		if o.Complete == nil || o.Complete.Type != history.Fail || o.Complete.Error == "" {
			return ""
		}
		e := o.Complete.Error
		if m := workerError.FindStringSubmatch(e); m != nil {
			e = fmt.Sprintf("error %s '%s'", m[1], m[2])
		} else {
			e = "'" + e + "'"
		}
		if n++; first == "" {
			first = e
		}
		texts[e] = true
	}
	if n == 0 {
		return ""
	}
	why := fmt.Sprintf("every acquire was refused (%d): %s", n, first)
	if len(texts) > 1 {
		why += fmt.Sprintf(", and %d other error texts", len(texts)-1)
	}
	return why
}

// workerError is a worker's error reply as clients/worker records it: its code and its text.
var workerError = regexp.MustCompile(`^worker [^:]*: error (-?[0-9]+): (.*)$`)

func end(s history.Record) int64 {
	if s.Until > 0 && s.Until < s.Exit {
		return s.Until
	}
	return s.Exit
}

// Check sweeps each key's sections in order of entry.
func (x Exclusion) Check(_ context.Context, h *history.History) Result {
	n := len(h.Sections)
	if n == 0 {
		if why := EveryAcquireRefused(h); why != "" {
			return Result{Valid: Unknown, Summary: "no critical section completed: " + why, Details: map[string]any{"refused": why}}
		}
		return Result{Valid: Unknown, Summary: "no critical section completed, so exclusion was never tested"}
	}
	if x.Capacity > 0 {
		return x.checkCapacity(h.Sections)
	}
	all := Overlaps(h.Sections)
	forced := forcedOut(h)
	var bad, caught []Overlap
	nforced := 0
	for _, o := range all {
		if forced(o) {
			nforced++ // forceUnlock ended the holder's hold by design; its section goes on unknowing
			continue
		}
		if x.Fenced && o.Fenced {
			caught = append(caught, o)
		} else {
			bad = append(bad, o)
		}
	}
	details := map[string]any{"sections": n, "overlaps": len(bad), "fenced_overlaps": len(caught)}
	if nforced > 0 {
		details["force_unlocked_overlaps"] = nforced
	}
	if len(bad) > 0 {
		details["first"] = bad[0]
		return Result{Valid: Invalid, Details: details, Violation: bad[0].String(), At: bad[0].Entered,
			End:     min(bad[0].HeldTo, bad[0].IntruderOut),
			Summary: fmt.Sprintf("%d overlapping pairs among %s", len(bad), Count(n, "critical section"))}
	}
	if len(caught) > 0 {
		rejected := 0
		for _, s := range h.Sections {
			if s.Rejected {
				rejected++
			}
		}
		return Result{Valid: Valid, Details: details, Summary: fmt.Sprintf("the lease was overrun: %d overlapping pairs "+
			"among %s, and fencing held: the resource refused all %d stale writes", len(caught), Count(n, "critical section"), rejected)}
	}
	if nforced > 0 {
		return Result{Valid: Valid, Details: details, Summary: fmt.Sprintf("%s, none overlapping "+
			"but %d pairs whose earlier holder a forceUnlock removed before the later grant", Count(n, "critical section"), nforced)}
	}
	return Result{Valid: Valid, Summary: Count(n, "critical section") + ", none overlapping", Details: details}
}

// forcedOut reports whether an overlap's earlier holder may have lost its hold to a forceUnlock before the
// intruder entered: a force_release of the key that may have taken effect (it deleted a hold, or its outcome
// is unknown) after the holder's grant was called and before the intruder's section began. forceUnlock
// deletes whoever holds the lock without telling it, so the holder's section goes on while the next owner
// is granted: an overlap a correct library gives by design, never counted against it. (A force that took
// effect just before the holder's grant excuses the pair too: the times cannot tell the two apart.)
func forcedOut(h *history.History) func(Overlap) bool {
	type span struct{ call, ret int64 }
	forces := map[string][]span{}
	for _, o := range h.Ops {
		if o.Invoke.F != "force_release" || o.Invoke.Src != "" {
			continue
		}
		switch o.Outcome() {
		case history.Ok:
			if o.Complete.Value == nil || *o.Complete.Value != 0 {
				forces[o.Invoke.Key] = append(forces[o.Invoke.Key], span{o.Invoke.Time, o.Complete.Time})
			}
		case history.Unknown:
			forces[o.Invoke.Key] = append(forces[o.Invoke.Key], span{o.Invoke.Time, math.MaxInt64})
		}
	}
	if len(forces) == 0 {
		return func(Overlap) bool { return false }
	}
	// The workload's grants (tryLock, not nested, ok) by holder thread and key, in order of call.
	type tk struct{ thread, key string }
	grants := map[tk][]int64{}
	for _, o := range h.Ops {
		inv := o.Invoke
		if inv.Src == "" && inv.F == "tryLock" && inv.Args["nested"] == 0 && o.Outcome() == history.Ok {
			k := tk{sectionThread(history.Record{Client: inv.Client, Thread: inv.Thread}), inv.Key}
			grants[k] = append(grants[k], inv.Time)
		}
	}
	for _, g := range grants {
		slices.Sort(g)
	}
	// ended: a force may have taken effect after the grant victim's section (entered at from) began with,
	// and before the other section entered (at to).
	ended := func(key, victim string, from, to int64) bool {
		g := grants[tk{victim, key}]
		i := sort.Search(len(g), func(i int) bool { return g[i] > from }) - 1
		if i < 0 {
			return false
		}
		for _, f := range forces[key] {
			if f.call < to && f.ret > g[i] {
				return true
			}
		}
		return false
	}
	// Either may be the victim: sections are ordered by entry, which a thread scheduled late after its grant
	// makes later than the grant of the one that followed the force.
	return func(o Overlap) bool {
		return ended(o.Key, o.Holder, o.HeldFrom, o.Entered) || ended(o.Key, o.Intruder, o.Entered, o.HeldFrom)
	}
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s held %s from %s to %s; %s entered at %s: both inside for %s",
		o.Holder, o.Key, Secs(o.HeldFrom), Secs(o.HeldTo), o.Intruder, Secs(o.Entered),
		Secs(min(o.HeldTo, o.IntruderOut)-o.Entered))
}

// Overlaps returns every pair of intersecting sections of different owners on one key, earliest first.
// Sections of one owner, and two readers, never count against each other.
func Overlaps(sections []history.Record) []Overlap {
	byKey := map[string][]*history.Record{} // pointers: a copy of each section was 288 B, 185 MB for a long run
	for i := range sections {
		byKey[sections[i].Key] = append(byKey[sections[i].Key], &sections[i])
	}
	var out []Overlap
	for key, ss := range byKey {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Enter < ss[j].Enter })
		var open []*history.Record // sections still inside at the current entry
		for _, s := range ss {
			kept := open[:0]
			for _, o := range open {
				if end(*o) > s.Enter {
					kept = append(kept, o)
				}
			}
			open = kept
			for _, o := range open {
				if o.Owner == s.Owner || (o.F == "read" && s.F == "read") {
					continue
				}
				out = append(out, Overlap{Key: key, Holder: sectionThread(*o), Intruder: sectionThread(*s), HolderOwner: o.Owner,
					IntruderOwner: s.Owner, HeldFrom: o.Enter, HeldTo: end(*o), Entered: s.Enter, IntruderOut: end(*s),
					Fenced: o.Token != 0 && (o.Rejected || s.Rejected)})
			}
			open = append(open, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entered < out[j].Entered })
	return out
}

// sectionThread names a section's holder as the history's rows do: client/thread (two threads of one client
// are two owners).
func sectionThread(s history.Record) string {
	if s.Thread == 0 {
		return s.Client
	}
	return fmt.Sprintf("%s/%d", s.Client, s.Thread)
}

// checkCapacity sweeps each key's entries and exits and finds moments with more holders than permits.
func (x Exclusion) checkCapacity(sections []history.Record) Result {
	type ev struct {
		t     int64
		delta int
		i     int // index into sections
	}
	byKey := map[string][]ev{}
	for i, s := range sections {
		byKey[s.Key] = append(byKey[s.Key], ev{s.Enter, 1, i}, ev{end(s), -1, i})
	}
	over, peak := 0, 0
	first := ""
	var firstAt int64
	for key, evs := range byKey {
		sort.Slice(evs, func(i, j int) bool {
			if evs[i].t != evs[j].t {
				return evs[i].t < evs[j].t
			}
			return evs[i].delta < evs[j].delta // exits first at a tie
		})
		inside := map[int]bool{}
		for _, e := range evs {
			if e.delta < 0 {
				delete(inside, e.i)
				continue
			}
			inside[e.i] = true
			peak = max(peak, len(inside))
			if len(inside) > x.Capacity {
				over++
				if first == "" || e.t < firstAt {
					var who []string
					for i := range inside {
						who = append(who, sectionThread(sections[i]))
					}
					sort.Strings(who)
					first, firstAt = fmt.Sprintf("%d holders of %s at %s with %d permits: %s", len(inside), key, Secs(e.t),
						x.Capacity, strings.Join(who, ", ")), e.t
				}
			}
		}
	}
	details := map[string]any{"sections": len(sections), "peak_holders": peak, "permits": x.Capacity, "over": over}
	if over > 0 {
		return Result{Valid: Invalid, Details: details, Violation: first, At: firstAt, End: firstAt,
			Summary: fmt.Sprintf("%d entries found more holders than the %d permits (peak %d)", over, x.Capacity, peak)}
	}
	return Result{Valid: Valid, Details: details,
		Summary: fmt.Sprintf("%d permit holds, never more than %d at once (permits %d)", len(sections), peak, x.Capacity)}
}
