package checker_test

import (
	"context"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// told-of-loss never flags a recorded mutex history that porcupine finds legal: each of those runs used the Go
// emulation, which answers a holder as Redis did, so an "ok" after a loss would be a double grant. The
// invalid ones' verdicts are logged: they come from the server losing writes, not from the client.
func TestToldOfLossCorpus(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		h, err := e.History()
		if err != nil {
			t.Fatal(err)
		}
		if h.Run == nil {
			t.Fatalf("%s: meta record: %v", e.Name, h.RunErr)
		}
		if h.Run.Checks.Family != "mutex" { // the checker judges the mutex family only (kinds/family.go)
			continue
		}
		r := checker.ToldOfLoss{}.Check(context.Background(), h)
		if e.Want == checker.Valid && r.Valid == checker.Invalid {
			t.Errorf("%s: told-of-loss says %v (%s: %s) on a legal history", e.Name, r.Valid, r.Summary, r.Violation)
		}
		t.Logf("%s (porcupine %v): %v: %s", e.Name, e.Want, r.Valid, r.Summary)
	}
}
