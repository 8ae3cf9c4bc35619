package checker

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// LostLock looks, owner by owner, for the simplest proof that a server forgot a lock: an owner's acquire
// was surely applied (and acknowledged by a replica where there are replicas), none of its own commands
// since could have let the lock go, and yet a later command of that owner was answered "not held" (or a
// re-entrant acquire "held by someone else") before the lease could have run out. Each step uses only
// definite outcomes, so unlike a linearizability search it needs no time budget however many outcomes
// are unknown: a lost failover write (Redisson #5256), a restart without data, or a clock jump all show
// here, and another client could then take the lock while this owner still believes it holds it.
// Fair locks and read holds answer differently and are skipped.
type LostLock struct{}

// Name is the checker's stable name.
func (LostLock) Name() string { return "lost-lock" }

// Loss is one proof.
type Loss struct {
	Key       string `json:"key"`
	Client    string `json:"client"`
	Owner     string `json:"owner"`
	Acquired  int64  `json:"acquired_ns"`
	LeaseFrom int64  `json:"lease_until_earliest_ns"`
	F         string `json:"f"`
	Call      int64  `json:"call_ns"`
	Return    int64  `json:"return_ns"`
}

// ownerOp is one command of an owner on a key, with its reply.
type ownerOp struct {
	c   Command
	out Reply
	i   int // in h.Ops: ties in call keep the history's order
}

// ownerGroups groups the mutex commands (not fair, not read holds) by key and owner, each group in order of
// call, the groups in order of their first call: what grouping the call-sorted MutexOps gives, straight
// from the history, without MutexOps' boxed copy of every command (150 MB for a million).
func ownerGroups(h *history.History) (map[[2]string][]ownerOp, [][2]string) {
	groups := map[[2]string][]ownerOp{}
	var order [][2]string
	eachCommand(h, newNames(), mutexCommands, func(i int, c Command, out Reply) {
		if c.Fair || c.Read {
			return
		}
		k := [2]string{c.Key, c.Owner}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ownerOp{c, out, i})
	})
	before := func(a, b ownerOp) bool { return a.c.Call < b.c.Call || a.c.Call == b.c.Call && a.i < b.i }
	for _, ops := range groups {
		sort.Slice(ops, func(a, b int) bool { return before(ops[a], ops[b]) })
	}
	sort.Slice(order, func(a, b int) bool { return before(groups[order[a]][0], groups[order[b]][0]) })
	return groups, order
}

// Check looks at each refusal an owner got and, before it, that owner's latest sure grant.
func (LostLock) Check(_ context.Context, h *history.History) Result {
	groups, order := ownerGroups(h)
	var losses []Loss
	for _, k := range order {
		ops := groups[k]
		// lets go: what could have ended this owner's hold (the watchdog renews concurrently with the
		// owner's own release, so order by call alone proves nothing).
		letsGo := func(o ownerOp) bool {
			if o.c.F != "release" && o.c.F != "renew" {
				return false
			}
			return o.out.Outcome == Unsure || o.c.Replay || o.c.F == "release" && o.out.Outcome == Applied && o.out.Value == 1
		}
		for j, r := range ops {
			refused := r.out.Outcome == Refused && !r.c.Replay
			if !refused || r.c.Return == math.MaxInt64 {
				continue
			}
			grant := -1 // the latest sure grant that returned before r was sent
			for i := j - 1; i >= 0; i-- {
				if g := ops[i]; g.c.F == "acquire" && g.out.Outcome == Applied && g.c.Return < r.c.Call {
					grant = i
					break
				}
			}
			if grant < 0 {
				continue
			}
			g := ops[grant].c
			sure, proof := int64(0), true
			for i, x := range ops {
				if i == j || i == grant {
					continue
				}
				if x.c.Call < r.c.Return && x.c.Return > g.Call && (letsGo(x) || x.out.Outcome == Refused && i < j) {
					proof = false // it may have let go after the grant, or the loss was already seen
					break
				}
				if x.c.Call >= g.Call && x.c.Return < r.c.Call && x.out.Outcome == Applied && (x.c.F == "renew" || x.c.F == "acquire") && x.c.Lease > 0 {
					sure = max(sure, x.c.Call+x.c.Lease-Epsilon(x.c.Lease))
				}
			}
			if g.Lease > 0 {
				sure = max(sure, g.Call+g.Lease-Epsilon(g.Lease))
			}
			if proof && r.c.Return < sure {
				losses = append(losses, Loss{Key: r.c.Key, Client: r.c.Client, Owner: r.c.Owner, Acquired: g.Call,
					LeaseFrom: sure, F: r.c.F, Call: r.c.Call, Return: r.c.Return})
			}
		}
	}
	if len(losses) == 0 {
		return Result{Valid: Valid, Summary: "no acknowledged lock was found gone before its lease could end"}
	}
	sort.SliceStable(losses, func(a, b int) bool { return losses[a].Return < losses[b].Return })
	l := losses[0]
	return Result{Valid: Invalid,
		Summary: fmt.Sprintf("%d time(s) an acknowledged lock was gone before its lease could end", len(losses)),
		Violation: fmt.Sprintf("%s acquired %s at %s (acknowledged); its %s, answered at %s, found the lock not its own, "+
			"although the lease could not end before %s and none of its commands since could have let it go: "+
			"the server lost the lock, and any other client could take it while %s still held it",
			l.Owner, l.Key, Secs(l.Acquired), l.F, Secs(l.Return), Secs(l.LeaseFrom), l.Owner),
		At: l.Acquired, End: l.Return, Details: losses}
}
