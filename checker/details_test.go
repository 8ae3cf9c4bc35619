package checker_test

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// Porcupine's details count every converted command and each of uncertain outcome, on every corpus
// history (counted per key, without a concatenated copy of all of them).
func TestLinearizableCounts(t *testing.T) {
	eachCorpusChecker(t, func(e corpus.Entry, lin *checker.Linearizable, h *history.History) {
		ops := lin.Operations(h) // a worker's API calls too, on the keys the commands leave out
		unknown := 0
		for _, o := range ops {
			if r, ok := o.Output.(checker.Reply); ok && r.Outcome == checker.Unsure || o.Return == math.MaxInt64 {
				unknown++
			}
		}
		d := lin.Check(context.Background(), h).Details.(map[string]any)
		if d["operations"] != len(ops) || d["unknown_operations"] != unknown || unknown == 0 && e.Name == "naive-sentinel-failover" {
			t.Fatalf("%s: details say %v operations, %v unknown; want %d, %d", e.Name, d["operations"], d["unknown_operations"], len(ops), unknown)
		}
	})
}

// A check that keeps no timeline gives the same verdict, summary and counts on every corpus history,
// and refuses to draw one rather than drawing an empty one.
func TestLinearizableNoTimeline(t *testing.T) {
	eachCorpusChecker(t, func(e corpus.Entry, lin *checker.Linearizable, h *history.History) {
		want := lin.Check(context.Background(), h)
		lin.NoTimeline = true
		got := lin.Check(context.Background(), h)
		wd, gd := want.Details.(map[string]any), got.Details.(map[string]any)
		if got.Valid != want.Valid || got.Violation != want.Violation || got.At != want.At ||
			gd["operations"] != wd["operations"] || gd["unknown_operations"] != wd["unknown_operations"] ||
			strings.Split(got.Summary, " (")[0] != strings.Split(want.Summary, " (")[0] {
			t.Fatalf("%s: without a timeline %v %q, with one %v %q", e.Name, got.Valid, got.Summary, want.Valid, want.Summary)
		}
		if err := lin.Visualize(io.Discard, h, nil); err == nil {
			t.Fatalf("%s: a timeline drawn after a check that kept none", e.Name)
		}
	})
}

// eachCorpusChecker calls f with every corpus history and its porcupine checker (a minute's bound).
func eachCorpusChecker(t *testing.T, f func(corpus.Entry, *checker.Linearizable, *history.History)) {
	t.Helper()
	entries, err := corpus.Load()
	if err != nil || len(entries) == 0 {
		t.Fatalf("corpus: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		lin, h, err := e.Checker(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f(e, lin, h)
	}
}
