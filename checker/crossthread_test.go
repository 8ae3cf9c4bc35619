package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// Cross-thread operations judged by the mutex model: stray releases, held and isLocked reads, forceUnlock.
func TestMutexModelCrossThread(t *testing.T) {
	tests := []struct {
		name string
		want porcupine.CheckResult
		ops  []porcupine.Operation
	}{
		{"a stray release refused is legal", porcupine.Ok, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "release", 30000, 2, 3, Refused, -1),
			cmd("a", "release", 30000, 4, 5, Applied, 1)}},
		{"a stray release answered ok is not", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "release", 30000, 2, 3, Applied, 1)}},
		{"held by the holder, not by another", porcupine.Ok, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "held", 0, 2, 3, Applied, 1),
			cmd("b", "held", 0, 2, 3, Applied, 0),
			cmd("b", "is_locked", 0, 4, 5, Applied, 1)}},
		{"held=true read by a non-holder", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "held", 0, 2, 3, Applied, 1)}},
		{"held=false read by the holder while surely held", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "held", 0, 2, 3, Applied, 0)}},
		{"isLocked=false while surely held", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "is_locked", 0, 2, 3, Applied, 0)}},
		{"isLocked=false once the lease may have run out inside the read", porcupine.Ok, []porcupine.Operation{
			cmd("a", "acquire", 100, 0, 1, Applied, 0),
			cmd("b", "is_locked", 0, 50, 150, Applied, 0),
			cmd("a", "held", 0, 160, 161, Applied, 0)}},
		{"isLocked=true of a free lock", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("a", "release", 30000, 2, 3, Applied, 1),
			cmd("b", "is_locked", 0, 4, 5, Applied, 1)}},
		{"an unknown read says nothing", porcupine.Ok, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "held", 0, 2, -1, Unsure, 0)}},
		{"forceUnlock then another's grant", porcupine.Ok, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("c", "force_release", 0, 2, 3, Applied, 1),
			cmd("b", "acquire", 30000, 4, 5, Applied, 0),
			cmd("a", "release", 30000, 6, 7, Refused, -1),
			cmd("a", "held", 0, 8, 9, Applied, 0)}},
		{"forceUnlock of a free lock finds nothing", porcupine.Ok, []porcupine.Operation{
			cmd("c", "force_release", 0, 0, 1, Refused, 0)}},
		{"forceUnlock says it deleted a free lock", porcupine.Illegal, []porcupine.Operation{
			cmd("c", "force_release", 0, 0, 1, Applied, 1)}},
		{"forceUnlock finds nothing while surely held", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("c", "force_release", 0, 2, 3, Refused, 0)}},
		{"a grant to another while held, without a force", porcupine.Illegal, []porcupine.Operation{
			cmd("a", "acquire", 30000, 0, 1, Applied, 0),
			cmd("b", "acquire", 30000, 4, 5, Applied, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.want, tc.ops...) })
	}
}

// forcedHistory is c1 granted lock-0, then (with force) c3 force-unlocking it, c2 granted it while c1's
// section goes on, and c1's release refused well within its lease: what forceUnlock does by design.
func forcedHistory(force bool) *history.History {
	ok, fail := history.Ok, history.Fail
	steps := []step{{"c1", "acquire", 0, 1, ok, 0, nil}}
	if force {
		steps = append(steps, step{"c3", "force_release", 100, 101, ok, 1, nil})
	}
	steps = append(steps, step{"c2", "acquire", 200, 201, ok, 0, nil}, step{"c1", "release", 300, 301, fail, -1, nil},
		step{"c2", "release", 400, 401, ok, 1, nil})
	ops := opsOf(steps)
	// The workload's own grants, which the sections begin with.
	for i, s := range []step{{"c1", "tryLock", 0, 2, ok, 0, nil}, {"c2", "tryLock", 199, 202, ok, 0, nil}} {
		inv := history.Record{Type: history.Invoke, ID: int64(100 + i), Time: s.call * 1e6, Client: s.client, Thread: 1,
			Key: "lock-0", Owner: s.client + "-uuid:1", F: s.f, Args: map[string]int64{"nested": 0}}
		done := inv
		done.Type, done.Time, done.Args = ok, s.ret*1e6, nil
		ops = append(ops, history.OperationOf(inv, &done))
	}
	secs := []history.Record{
		{Type: history.Section, Client: "c1", Thread: 1, Owner: "c1-uuid:1", Key: "lock-0", Enter: 3e6, Exit: 299e6},
		{Type: history.Section, Client: "c2", Thread: 1, Owner: "c2-uuid:1", Key: "lock-0", Enter: 203e6, Exit: 399e6},
	}
	return &history.History{Ops: ops, Sections: secs}
}

// A correct library is never flagged for what forceUnlock does by design: the victim's section overlaps
// the next holder's and its release is refused within its lease. Without the force, the same history is
// flagged by exclusion and lost-lock (the control: the checks still see a real loss).
func TestForceUnlockByDesign(t *testing.T) {
	ctx := context.Background()
	for _, force := range []bool{true, false} {
		h := forcedHistory(force)
		want := Valid
		if !force {
			want = Invalid
		}
		if r := (Exclusion{}).Check(ctx, h); r.Valid != want {
			t.Errorf("force %v: exclusion %v, want %v: %s %s", force, r.Valid, want, r.Summary, r.Violation)
		} else if force && !strings.Contains(r.Summary, "forceUnlock") {
			t.Errorf("exclusion's summary does not say the forceUnlock: %s", r.Summary)
		}
		if r := (LostLock{}).Check(ctx, h); r.Valid != want {
			t.Errorf("force %v: lost-lock %v, want %v: %s", force, r.Valid, want, r.Violation)
		}
		if r := (ToldOfLoss{}).Check(ctx, h); r.Valid != Valid {
			t.Errorf("force %v: told-of-loss %v: %s", force, r.Valid, r.Violation)
		}
		res := porcupine.CheckOperations(MutexModel.ToModel(), MutexOps(h))
		if wantOk := force; res != wantOk {
			t.Errorf("force %v: the model says %v", force, res)
		}
	}
}

// The model judges the victim's refused release as any refusal: Forced is cleared for it.
func TestForcedRefusalJudgedByTheModel(t *testing.T) {
	var forced int
	eachCommand(forcedHistory(true), newNames(), mutexCommands, func(_ int, in Command, out Reply) {
		if in.Forced {
			forced++
			if !in.Replay || in.F != "release" {
				t.Errorf("marked %+v", in)
			}
		}
	})
	if forced != 1 {
		t.Fatalf("%d commands marked forced, want the victim's release", forced)
	}
	for _, op := range MutexOps(forcedHistory(true)) {
		if in := op.Input.(Command); in.Forced || in.Replay {
			t.Fatalf("the model got %+v", in)
		}
	}
}

// A client kept on an isolated old primary during a failover may read a branch the failover throws away:
// its reads there are left out, as its refusals are.
func TestStateReadsSkippedInSplitBrain(t *testing.T) {
	ok := history.Ok
	h := &history.History{Ops: opsOf([]step{{"c1", "acquire", 0, 1, ok, 0, nil}, {"c2", "is_locked", 100, 101, ok, 0, nil},
		{"c2", "held", 102, 103, ok, 1, nil}})}
	if porcupine.CheckOperations(MutexModel.ToModel(), MutexOps(h)) {
		t.Fatal("without the failover, the reads contradict c1's hold")
	}
	h.Faults = []history.Record{{Type: history.Fault, F: "failover", Phase: "start", Time: 50e6, Targets: []string{"n1", "keep:c2"}},
		{Type: history.Fault, F: "failover", Phase: "stop", Time: 90e6, Targets: []string{"n1", "keep:c2"}}}
	if n := len(MutexOps(h)); n != 1 {
		t.Fatalf("%d commands, want c1's acquire alone", n)
	}
}

// The victim of a force may enter its section after the next owner entered (its thread scheduled late
// after its grant): sections are ordered by entry, and the pair is excused either way round.
func TestForceUnlockVictimEnteredLate(t *testing.T) {
	for _, force := range []bool{true, false} {
		h := forcedHistory(force)
		h.Sections[0].Enter = 250e6
		want := Valid
		if !force {
			want = Invalid
		}
		if r := (Exclusion{}).Check(context.Background(), h); r.Valid != want {
			t.Errorf("force %v: exclusion %v, want %v: %s %s", force, r.Valid, want, r.Summary, r.Violation)
		}
	}
}
