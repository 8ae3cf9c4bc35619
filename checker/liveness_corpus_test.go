package checker_test

import (
	"context"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// The liveness checkers never call a committed history invalid: none of them hung a waiter (the corpus is
// fault runs of the Go emulation, whose waiters are woken by the release or retry at the ttl).
func TestLivenessOnCorpus(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		h, err := e.History()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []checker.Checker{checker.SlowWakeup{}, checker.Starvation{}, checker.Starvation{Fair: true}, checker.KeptAlive{}} {
			r := c.Check(context.Background(), h)
			if r.Valid == checker.Invalid {
				t.Errorf("%s: %s says invalid: %s", e.Name, c.Name(), r.Violation)
			}
			t.Logf("%s: %s %v: %s", e.Name, c.Name(), r.Valid, r.Summary)
		}
	}
}
