package checker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Minimize finds the smallest set a predicate holds of: here, any set holding both 3 and 11.
func TestMinimizeFindsTheTwoThatMatter(t *testing.T) {
	tests := 0
	keep, minimal := checker.Minimize(context.Background(), 40, func(k []int) bool {
		tests++
		return slices.Contains(k, 3) && slices.Contains(k, 11)
	})
	if !slices.Equal(keep, []int{3, 11}) || !minimal {
		t.Fatalf("kept %v (minimal %v), want [3 11]", keep, minimal)
	}
	t.Logf("%d tests", tests)
}

// A bound that runs out keeps the smallest set proved so far, and says it is not minimal.
func TestMinimizeStopsAtItsBound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	keep, minimal := checker.Minimize(ctx, 40, func(k []int) bool {
		cancel()
		return slices.Contains(k, 3)
	})
	if minimal || !slices.Contains(keep, 3) || len(keep) == 40 {
		t.Fatalf("kept %v (minimal %v): want fewer than 40 with 3 in them, not minimal", keep, minimal)
	}
}

// op is a hand-built lock command of client c (thread 1) on lock-0, called at ms and answered at ms+1.
func op(id int64, c, f string, ms int64, typ history.Type, value *int64) history.Operation {
	return history.Operation{
		Invoke: history.Call{Time: ms * 1e6, ID: id, Client: c, Thread: 1, Key: "lock-0", Owner: c + "-uuid:1", F: f,
			Args: map[string]int64{"lease_ms": 30000}},
		Complete: &history.Result{Type: typ, Time: ms*1e6 + 1e6, Value: value}}
}

func proofOf(t *testing.T, h *history.History) (checker.Proof, []string) {
	t.Helper()
	lin := &checker.Linearizable{Label: "porcupine", Model: checker.MutexModel, Convert: checker.MutexOps, Timeout: time.Minute}
	res := lin.Check(context.Background(), h)
	if res.Valid != checker.Invalid {
		t.Fatalf("the hand-built history is %v, want invalid", res.Valid)
	}
	p, ok := lin.Proof(context.Background(), h, res, checker.ProofBound)
	if !ok {
		t.Fatalf("no proof of %s", res.Violation)
	}
	again := &checker.Linearizable{Label: "porcupine", Model: checker.MutexModel, Convert: checker.MutexOps, Timeout: time.Minute}
	if r := again.Check(context.Background(), p.Excerpt(h)); r.Valid != checker.Invalid {
		t.Fatalf("the excerpt is %v: %s", r.Valid, r.Summary)
	}
	var got []string
	for _, i := range p.Ops {
		got = append(got, h.Ops[i].Invoke.Client+" "+h.Ops[i].Invoke.F)
	}
	return p, got
}

// Two holders at once, among commands that do not matter: the proof is c1's hold (its grant, or its
// renewal, which says as much) and c2's grant.
func TestProofIsTheTwoGrants(t *testing.T) {
	v := history.Int64
	h := &history.History{Ops: []history.Operation{
		op(1, "c3", "acquire", 10, history.Ok, nil), op(2, "c3", "release", 20, history.Ok, v(1)),
		op(3, "c1", "acquire", 30, history.Ok, nil),
		op(4, "c3", "acquire", 40, history.Fail, v(25000)), op(5, "c1", "renew", 50, history.Ok, v(1)),
		op(6, "c2", "acquire", 60, history.Ok, nil),
		op(7, "c3", "acquire", 70, history.Fail, v(25000)),
	}}
	p, got := proofOf(t, h)
	if len(got) != 2 || got[0] != "c1 acquire" && got[0] != "c1 renew" || got[1] != "c2 acquire" || !p.Minimal {
		t.Fatalf("proof %v (minimal %v), want c1's hold and c2's grant", got, p.Minimal)
	}
}

// A refusal on a lock its holder let go: the proof keeps the release that freed it. A refusal alone (the
// history cut down to it) would have no legal order from a free lock too, but proves nothing of this
// history: the commands left out may have taken effect, and the proof holds only if that changes nothing.
func TestProofKeepsWhatFreedTheLock(t *testing.T) {
	v := history.Int64
	h := &history.History{Ops: []history.Operation{
		op(1, "c1", "acquire", 10, history.Ok, nil), op(2, "c3", "acquire", 15, history.Fail, v(25000)),
		op(3, "c1", "release", 20, history.Ok, v(1)),
		op(4, "c2", "acquire", 30, history.Fail, v(25000)),
	}}
	_, got := proofOf(t, h)
	if !slices.Contains(got, "c1 release") || !slices.Contains(got, "c2 acquire") || len(got) > 3 {
		t.Fatalf("proof %v: want c1's release and c2's refusal", got)
	}
}

// mutual-exclusion's proof cites the first overlap's two sections and each holder's grant, nothing else;
// the excerpt alone is still invalid.
func TestExclusionCitesTheOverlap(t *testing.T) {
	cs := func(c string, enter, exit int64) history.Record {
		return history.Record{Type: history.Section, Time: exit * 1e6, Client: c, Thread: 1, Key: "lock-0",
			Owner: c + "-uuid:1", Enter: enter * 1e6, Exit: exit * 1e6}
	}
	h := &history.History{
		Ops: []history.Operation{
			op(1, "c1", "tryLock", 10, history.Ok, nil), op(2, "c1", "acquire", 10, history.Ok, nil),
			op(3, "c3", "tryLock", 12, history.Fail, nil),
			op(4, "c2", "tryLock", 20, history.Ok, nil), op(5, "c2", "acquire", 20, history.Ok, nil),
		},
		Sections: []history.Record{cs("c1", 11, 40), cs("c2", 21, 30), cs("c3", 50, 60)},
		Faults: []history.Record{{Type: history.Fault, Time: 15e6, F: "pause", Phase: "start", Targets: []string{"c1"}},
			{Type: history.Fault, Time: 18e6, F: "pause", Phase: "stop", Targets: []string{"c1"}},
			{Type: history.Fault, Time: 45e6, F: "kill", Phase: "start", Targets: []string{"n1"}}},
	}
	p := cited(t, checker.Exclusion{}, h)
	if !slices.Equal(p.Sections, []int{0, 1}) || !slices.Equal(p.Ops, []int{0, 1, 3, 4}) || !slices.Equal(p.Faults, []int{0, 1}) {
		t.Fatalf("cited sections %v, operations %v, faults %v; want [0 1], [0 1 3 4], [0 1]", p.Sections, p.Ops, p.Faults)
	}
}

// cited is c's citation of its invalid verdict on h, whose excerpt c still finds invalid.
func cited(t *testing.T, c interface {
	checker.Checker
	checker.Citer
}, h *history.History) checker.Proof {
	t.Helper()
	res := c.Check(context.Background(), h)
	p, ok := c.Cite(h, res)
	if res.Valid != checker.Invalid || !ok {
		t.Fatalf("%v (%s), cited %v", res.Valid, res.Summary, ok)
	}
	if r := c.Check(context.Background(), p.Excerpt(h)); r.Valid != checker.Invalid {
		t.Fatalf("the excerpt is %v: %s", r.Valid, r.Summary)
	}
	return p
}

// lost-lock's proof cites the owner's grant, its renewal and the release that found the lock gone, not the
// other commands; the excerpt alone is still invalid.
func TestLostLockCitesTheLoss(t *testing.T) {
	v := history.Int64
	h := &history.History{Ops: []history.Operation{
		op(1, "c2", "acquire", 5, history.Ok, nil), op(2, "c2", "release", 8, history.Ok, v(1)),
		op(3, "c1", "acquire", 10, history.Ok, nil), op(4, "c3", "acquire", 12, history.Fail, v(25000)),
		op(5, "c1", "renew", 20, history.Ok, v(1)), op(6, "c1", "release", 30, history.Fail, v(0)),
	}}
	if p := cited(t, checker.LostLock{}, h); !slices.Equal(p.Ops, []int{2, 4, 5}) {
		t.Fatalf("cited operations %v, want [2 4 5]", p.Ops)
	}
}

// told-of-loss's proof cites the holder's grant, the other owner's grant (once the holder's 30 s lease may
// have run out) and the holder's renewal answered ok after it; the excerpt alone is still invalid.
func TestToldOfLossCitesTheSilence(t *testing.T) {
	v := history.Int64
	h := &history.History{Ops: []history.Operation{
		op(1, "c1", "acquire", 10, history.Ok, nil), op(2, "c3", "acquire", 12, history.Fail, v(25000)),
		op(3, "c2", "acquire", 40100, history.Ok, nil), op(4, "c3", "acquire", 40150, history.Fail, v(25000)),
		op(5, "c1", "renew", 40200, history.Ok, v(1)),
	}}
	if p := cited(t, checker.ToldOfLoss{}, h); !slices.Equal(p.Ops, []int{0, 2, 4}) {
		t.Fatalf("cited operations %v, want [0 2 4]", p.Ops)
	}
}
