package checker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// LostLock looks, owner by owner, for the simplest proof that a lock was lost: an owner's acquire
// was surely applied (and acknowledged by a replica where there are replicas), none of its own commands
// since could have let the lock go, and yet a later command of that owner was answered "not held" (or a
// re-entrant acquire "held by someone else") before the lease could have run out. Each step uses only
// definite outcomes, so unlike a linearizability search it needs no time budget however many outcomes
// are unknown: a lost failover write (Redisson #5256), a restart without data, or a clock jump all show
// here, and another client could then take the lock while this owner still believes it holds it.
// Fair locks and read holds answer differently and are skipped. Where another owner's acquire was
// refused after that, with no grant since, the key was still there: the explanation then says the client
// forgot its owner (token), not that the server lost the lock.
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
	// KeptBy, when set, is the owner whose acquire was refused at KeptAt, after the refusal and with no
	// other grant since Acquired: the key was still there. The server kept the lock; the client no longer
	// presented the owner it was granted under (it forgot or swapped its token).
	KeptBy string `json:"kept_by,omitempty"`
	KeptAt int64  `json:"kept_ns,omitempty"`
	// Gone is what the history shows took the key between the grant and the refusal: another owner's
	// command, the holder's own, or nothing recorded (the server).
	Gone Gone `json:"gone"`
}

// GoneBy says whose commands the history shows could have removed a lost lock's key.
type GoneBy string

// What removed a lost lock, as far as the history shows.
const (
	GoneServer GoneBy = "server" // no recorded command could have: the server lost it
	GoneOwn    GoneBy = "own"    // the holder's own command (its library's renew, say) was the last on the key
	GoneOther  GoneBy = "other"  // another owner's release, acknowledged as deleting a key, in between
)

// Gone is a lost lock's cause as the history shows it: by whom, which command, when it was called.
type Gone struct {
	By    GoneBy `json:"by"`
	Owner string `json:"owner,omitempty"`
	F     string `json:"f,omitempty"`
	At    int64  `json:"at_ns,omitempty"`
}

// String says it in words, for the explanation.
func (g Gone) String() string {
	switch g.By {
	case GoneOther:
		return fmt.Sprintf("another owner's command could have removed the key: %s's %s, called at %s", g.Owner, g.F, Secs(g.At))
	case GoneOwn:
		return fmt.Sprintf("no other owner's command could have removed the key; the last command on it was the holder's own %s, "+
			"called at %s and acknowledged: either that command removed the key, or the server lost it", g.F, Secs(g.At))
	}
	return "no recorded command since the grant, its own or another owner's, could have removed the key: the server lost the lock"
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
		if c.Fair || c.Read || c.SplitRefusal(out) { // a split vote's refusal says nothing (MutexOps)
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

// surelyUntil is when the owner's hold surely lasted until, as far as its own commands before the refusal r
// say. Each of them that sets a lease sets it afresh, counted from its call: the grant, a renewal, a
// re-entry, an inner unlock that leaves the lock held (Redisson PEXPIREs each: a renewal at the watchdog's
// 600 ms cuts a 10 s re-entry's lease, an inner unlock sets internalLockLeaseTime, which a re-entry with a
// shorter lease set; explore's reentrant and fenced locks, 30 minutes each, were called lost by the longest
// of them). The lock lasts at least as long as the shortest lease among those no later one surely followed
// (a library whose renewal only extends is judged as leniently). 0: no lease known.
func surelyUntil(ops []ownerOp, grant int, r ownerOp) int64 {
	g := ops[grant].c
	sets := func(i int) bool {
		x := ops[i]
		return i == grant || x.out.Outcome == Applied && x.c.Lease > 0 && x.c.Return < r.c.Call && x.c.Return > g.Call &&
			(x.c.F == "acquire" || x.c.F == "renew" || x.c.F == "release" && x.out.Value != 1)
	}
	// One that returned before the latest of them was called surely ran before it.
	latest := int64(math.MinInt64)
	for i := range ops {
		if sets(i) {
			latest = max(latest, ops[i].c.Call)
		}
	}
	sure := int64(math.MaxInt64)
	for i, x := range ops {
		if !sets(i) || x.c.Return < latest {
			continue
		}
		if x.c.Lease <= 0 {
			return 0
		}
		sure = min(sure, x.c.Call+x.c.Lease-Epsilon(x.c.Lease))
	}
	return sure
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
			proof := true
			for i, x := range ops {
				if i != j && i != grant && x.c.Call < r.c.Return && x.c.Return > g.Call && (letsGo(x) || x.out.Outcome == Refused && i < j) {
					proof = false // it may have let go after the grant, or the loss was already seen
					break
				}
			}
			if !proof {
				continue
			}
			if sure := surelyUntil(ops, grant, r); r.c.Return < sure {
				l := Loss{Key: r.c.Key, Client: r.c.Client, Owner: r.c.Owner, Acquired: g.Call,
					LeaseFrom: sure, F: r.c.F, Call: r.c.Call, Return: r.c.Return}
				l.KeptBy, l.KeptAt = keptAfter(groups, order, ops[grant], r)
				l.Gone = goneBy(groups, order, ops, ops[grant], r)
				losses = append(losses, l)
			}
		}
	}
	if len(losses) == 0 {
		return Result{Valid: Valid, Summary: "no acknowledged lock was found gone before its lease could end"}
	}
	sort.SliceStable(losses, func(a, b int) bool { return losses[a].Return < losses[b].Return })
	l := losses[0]
	what := fmt.Sprintf("%s acquired %s at %s (acknowledged); its %s, answered at %s, found the lock not its own, "+
		"although the lease could not end before %s and none of its own releases since could have let it go",
		l.Owner, l.Key, Secs(l.Acquired), l.F, Secs(l.Return), Secs(l.LeaseFrom))
	if l.KeptBy != "" {
		what += fmt.Sprintf(". Yet the key was still held after that: %s's acquire, answered at %s, was refused, and nobody "+
			"else was granted %s in between. The server kept the lock; the client no longer presented the owner it was "+
			"granted under (it forgot or swapped its token), so its lock stays in Redis, unreleasable, until the lease ends, "+
			"while %s believes it let go", l.KeptBy, Secs(l.KeptAt), l.Key, l.Owner)
	} else {
		what += fmt.Sprintf("; %s, and any other client could take it while %s still held it", l.Gone, l.Owner)
	}
	return Result{Valid: Invalid,
		Summary:   fmt.Sprintf("%d time(s) an acknowledged lock was gone before its lease could end", len(losses)),
		Violation: what, At: l.Acquired, End: l.Return, Details: losses}
}

// keptAfter looks, after owner's refused command r, for another owner's acquire on the key refused (so
// the key still existed) with no acquire since g that may have been granted to anyone (so it was still
// g's): the proof that the server kept the lock r was refused. It returns that owner and when it was
// answered, or "" when the history does not show it.
func keptAfter(groups map[[2]string][]ownerOp, order [][2]string, g, r ownerOp) (string, int64) {
	var taken []ownerOp // acquires other than g that may have taken the key since g
	var refused []ownerOp
	for _, k := range order {
		if k[0] != r.c.Key {
			continue
		}
		for _, x := range groups[k] {
			if x.c.F != "acquire" || x.i == g.i || x.c.Replay {
				continue
			}
			switch {
			case x.out.Outcome == Refused && k[1] != r.c.Owner && x.c.Call >= r.c.Return && x.c.Return != math.MaxInt64:
				refused = append(refused, x)
			case x.out.Outcome != Refused && x.c.Return > g.c.Return:
				taken = append(taken, x)
			}
		}
	}
	best := ownerOp{c: Command{Return: math.MaxInt64}}
	for _, x := range refused {
		if x.c.Return >= best.c.Return {
			continue
		}
		if !slices.ContainsFunc(taken, func(t ownerOp) bool { return t.c.Call < x.c.Return }) {
			best = x
		}
	}
	if best.c.Return == math.MaxInt64 {
		return "", 0
	}
	return best.c.Owner, best.c.Return
}

// goneBy looks between the grant g and the refusal r for what the history shows could have removed the
// key: another owner's release acknowledged as deleting a key (the naive lock's DEL of any holder), else the holder's own acknowledged renew or expire (a library's renew that
// deletes), else nothing: the server.
func goneBy(groups map[[2]string][]ownerOp, order [][2]string, own []ownerOp, g, r ownerOp) Gone {
	// Another owner's command may have run on the server before the refused one while it was still in
	// flight (at the workload's end every thread releases at once): called before the refusal returned.
	between := func(x ownerOp) bool {
		return x.c.Call < r.c.Return && x.c.Return > g.c.Return && x.i != g.i && x.i != r.i
	}
	best := Gone{By: GoneServer}
	for _, k := range order {
		if k[0] != r.c.Key || k[1] == r.c.Owner {
			continue
		}
		for _, x := range groups[k] {
			deleted := x.out.Outcome == Applied && x.out.Value != 0 // it surely deleted a key: an unknown one proves nothing
			if x.c.F == "release" && deleted && between(x) && (best.By == GoneServer || x.c.Call < best.At) {
				best = Gone{By: GoneOther, Owner: x.c.Client, F: x.c.F, At: x.c.Call}
			}
		}
	}
	if best.By != GoneServer {
		return best
	}
	for i := len(own) - 1; i >= 0; i-- {
		if x := own[i]; (x.c.F == "renew" || x.c.F == "expire") && x.out.Outcome == Applied && between(x) {
			return Gone{By: GoneOwn, Owner: x.c.Client, F: x.c.F, At: x.c.Call}
		}
	}
	return best
}
