package checker

import (
	"context"
	"fmt"
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

// Check walks each owner's commands in call order.
func (LostLock) Check(_ context.Context, h *history.History) Result {
	type track struct {
		held      bool
		acquired  int64
		sureUntil int64
	}
	var cmds []Command
	outs := map[int]Reply{}
	for _, op := range MutexOps(h) {
		c := op.Input.(Command)
		if c.Fair || c.Read {
			continue
		}
		outs[len(cmds)] = op.Output.(Reply)
		cmds = append(cmds, c)
	}
	idx := make([]int, len(cmds))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return cmds[idx[a]].Call < cmds[idx[b]].Call })
	state := map[[2]string]*track{}
	var losses []Loss
	for _, i := range idx {
		c, out := cmds[i], outs[i]
		k := [2]string{c.Key, c.Owner}
		t := state[k]
		if t == nil {
			t = &track{}
			state[k] = t
		}
		if out.Outcome == Unsure || c.Replay {
			t.held = false // from here on this owner's state is unknown: stop until its next sure grant
			continue
		}
		extend := func() {
			if c.Lease > 0 {
				t.sureUntil = max(t.sureUntil, c.Call+c.Lease-Epsilon(c.Lease))
			}
		}
		lost := func() {
			if t.held && c.Return < t.sureUntil {
				losses = append(losses, Loss{Key: c.Key, Client: c.Client, Owner: c.Owner, Acquired: t.acquired,
					LeaseFrom: t.sureUntil, F: c.F, Call: c.Call, Return: c.Return})
			}
			t.held = false
		}
		switch {
		case c.F == "acquire" && out.Outcome == Applied:
			if !t.held {
				t.held, t.acquired, t.sureUntil = true, c.Call, 0
			}
			extend()
		case c.F == "acquire": // refused: someone else holds it
			lost()
		case c.F == "renew" && out.Outcome == Applied:
			extend()
		case c.F == "release" && out.Outcome == Applied:
			if out.Value == 1 {
				t.held = false
			}
		case c.F == "release" || c.F == "renew": // refused: not held
			lost()
		}
	}
	if len(losses) == 0 {
		return Result{Valid: Valid, Summary: "no acknowledged lock was found gone before its lease could end"}
	}
	l := losses[0]
	return Result{Valid: Invalid,
		Summary: fmt.Sprintf("%d time(s) an acknowledged lock was gone before its lease could end", len(losses)),
		Violation: fmt.Sprintf("%s acquired %s at %s (acknowledged); its %s, answered at %s, found the lock not its own, "+
			"although the lease could not end before %s and none of its commands since could have let it go: "+
			"the server lost the lock, and any other client could take it while %s still held it",
			l.Client, l.Key, Secs(l.Acquired), l.F, Secs(l.Return), Secs(l.LeaseFrom), l.Client),
		At: l.Acquired, End: l.Return, Details: losses}
}
