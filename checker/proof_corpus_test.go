package checker_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// The proof of every invalid corpus history: at most 10 operations of its illegal key that, written as an
// excerpt, read back by the history reader and checked by the same checker alone, are still invalid. The
// sizes it logs are docs/checking.md's table.
func TestCorpusProof(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Want != checker.Invalid {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			lin, h, err := e.Checker(time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			res := lin.Check(context.Background(), h)
			start := time.Now()
			p, ok := lin.Proof(context.Background(), h, res, checker.ProofBound)
			if !ok {
				t.Fatalf("no proof of %s", res.Violation)
			}
			took := time.Since(start)
			if len(p.Ops) > 10 {
				t.Errorf("the proof has %d operations, want at most 10", len(p.Ops))
			}
			var b bytes.Buffer
			if err := p.Excerpt(h).Write(&b); err != nil {
				t.Fatal(err)
			}
			x, err := history.Read(&b)
			if err != nil {
				t.Fatal(err)
			}
			again, _, err := e.Checker(time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if r := again.Check(context.Background(), x); r.Valid != checker.Invalid {
				t.Fatalf("the excerpt of %d operations is %v: %s", len(x.Ops), r.Valid, r.Summary)
			}
			t.Logf("%s: %d of %d operations (window %d), %d fault records, minimal %v, %d candidates in %s",
				e.Name, len(p.Ops), len(h.Ops), p.Window, len(p.Faults), p.Minimal, p.Tried, took.Round(time.Millisecond))
		})
	}
}
