package checker

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// KeptAlive looks for a lock kept alive with no living holder (Redisson #7272, #2037, the read-lock twin
// of #6144): a renewal that the server applied (it answered that the owner still held the key, and moved
// its lease) although the renewing client had fully released that key before the renewal was even sent,
// and had not asked for it again since. The evidence is the cheapest that is sound: the client's own
// unlock (the application saw it succeed) and the renewal command on the wire (a worker's taps) or in the
// client's command records (the emulation's watchdog). A renewal sent after the unlock's reply reached the
// application runs after the unlock on the server, so the owner's hold outlived its release. A tryLock of
// that client whose outcome is unknown may have taken the lock back unseen: the case is then undecided.
type KeptAlive struct{}

// Name is the checker's stable name.
func (KeptAlive) Name() string { return "kept-alive" }

// Zombie is one renewal of a released lock.
type Zombie struct {
	Key      string `json:"key"`
	Client   string `json:"client"`
	Released int64  `json:"released_ns"`
	Renewed  int64  `json:"renewed_ns"`
	Src      string `json:"src,omitempty"`
	Note     string `json:"undecided,omitempty"`
}

// Check pairs each applied renewal with its client's calls on that key.
func (KeptAlive) Check(_ context.Context, h *history.History) Result {
	type ck struct{ client, key string }
	calls := map[ck][]history.Operation{} // tryLock and unlock, every thread of the client
	var renewals []history.Operation
	for _, o := range h.Ops {
		inv := o.Invoke
		switch {
		case inv.Src == "" && (inv.F == "tryLock" || inv.F == "unlock"):
			calls[ck{inv.Client, inv.Key}] = append(calls[ck{inv.Client, inv.Key}], o)
		case inv.F == "renew" && o.Outcome() == history.Ok && o.Complete.Value != nil && *o.Complete.Value == 1:
			renewals = append(renewals, o)
		}
	}
	var found, undecided []Zombie
	for _, r := range renewals {
		t := r.Invoke.Time
		// Per thread: the client's threads share its watchdog, so the lock is released only once every
		// thread that called before the renewal was last seen releasing it (-1: it holds, or asks, still).
		last, note := map[int64]int64{}, ""
		for _, o := range calls[ck{r.Invoke.Client, r.Invoke.Key}] {
			ret := int64(math.MaxInt64)
			if o.Complete != nil {
				ret = o.Complete.Time
			}
			th := o.Invoke.Thread
			switch {
			case o.Invoke.Time >= t:
				continue // after the renewal was sent
			case o.Invoke.F == "tryLock" && o.Outcome() == history.Unknown:
				note = fmt.Sprintf("its tryLock at %s has an unknown outcome", Secs(o.Invoke.Time))
			case o.Invoke.F == "tryLock" && (ret >= t || o.Outcome() == history.Ok):
				last[th] = -1 // asked for it again (or still asking): a holder may live
			case o.Invoke.F == "unlock" && o.Invoke.Args["nested"] == 0 && o.Outcome() == history.Ok && ret < t:
				last[th] = ret
			case o.Invoke.F == "unlock" && ret >= t:
				last[th] = -1 // its release was still in flight
			}
		}
		released := int64(-1)
		for _, at := range last {
			if at < 0 {
				released = -1
				break
			}
			released = max(released, at)
		}
		if released < 0 {
			continue
		}
		z := Zombie{Key: r.Invoke.Key, Client: r.Invoke.Client, Released: released, Renewed: t, Src: r.Invoke.Src, Note: note}
		if note != "" {
			undecided = append(undecided, z)
		} else {
			found = append(found, z)
		}
	}
	if len(found) > 0 {
		sort.Slice(found, func(i, j int) bool { return found[i].Renewed < found[j].Renewed })
		z := found[0]
		return Result{Valid: Invalid,
			Summary: fmt.Sprintf("%d renewal(s) kept a released lock alive", len(found)),
			Violation: fmt.Sprintf("%s fully released %s at %s and did not ask for it again, yet a renewal it sent at %s (%s later) "+
				"found its hold still there and moved the lease: the lock is kept alive with no living holder",
				z.Client, z.Key, Secs(z.Released), Secs(z.Renewed), time.Duration(z.Renewed-z.Released).Round(time.Millisecond)),
			At: z.Released, End: z.Renewed, Stall: z.Client + "'s released lock kept alive", Details: found}
	}
	if len(undecided) > 0 {
		z := undecided[0]
		return Result{Valid: Unknown,
			Summary:   fmt.Sprintf("%d renewal(s) of a released lock, each after a tryLock of unknown outcome", len(undecided)),
			Violation: fmt.Sprintf("%s's %s renewed at %s after its release at %s, but %s", z.Client, z.Key, Secs(z.Renewed), Secs(z.Released), z.Note),
			Details:   undecided}
	}
	return Result{Valid: Valid, Summary: "no renewal applied to a lock its client had released"}
}
