package checker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// A re-entry with a shorter lease than the hold it joins (--lease 1s-10s draws one per acquire) shrinks the
// hold: Redisson's acquire sets the key's pttl to the re-entry's lease. The history
// (testdata/leases/reentry-shorter-lease.jsonl) has c2/1 granted 1.3 s after c1/1's 1 s re-entry and c1/1's
// release then refused: legal by each grant's own lease, and both checkers that read leases must say so.
// The same history with the first grant's 10 s lease on every acquire (what a run-wide lease would give)
// is illegal, so the verdict depends on each grant's own lease.
func TestReentryWithShorterLeaseShrinksHold(t *testing.T) {
	h, err := history.ReadFile(filepath.Join("testdata", "leases", "reentry-shorter-lease.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	judge := func(h *history.History) (lin, lost checker.Result) {
		l := &checker.Linearizable{Label: "porcupine", Timeout: time.Minute, Model: checker.MutexModel, Convert: checker.MutexOps}
		return l.Check(context.Background(), h), checker.LostLock{}.Check(context.Background(), h)
	}
	lin, lost := judge(h)
	if lin.Valid != checker.Valid || lost.Valid != checker.Valid {
		t.Fatalf("by each grant's own lease: porcupine %v (%s), lost-lock %v (%s); want both valid",
			lin.Valid, lin.Violation, lost.Valid, lost.Violation)
	}
	for i := range h.Ops {
		if h.Ops[i].Invoke.F == "acquire" {
			h.Ops[i].Invoke.Args["lease_ms"] = 10000
		}
	}
	lin, lost = judge(h)
	if lin.Valid != checker.Invalid || lost.Valid != checker.Invalid {
		t.Fatalf("with one lease for every grant: porcupine %v, lost-lock %v; want both invalid (the fixture no longer tells leases apart)",
			lin.Valid, lost.Valid)
	}
}
