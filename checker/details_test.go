package checker_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/corpus"
)

// Porcupine's details count every converted command and each of uncertain outcome, on every corpus
// history (counted per key, without a concatenated copy of all of them).
func TestLinearizableCounts(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil || len(entries) == 0 {
		t.Fatalf("corpus: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		lin, h, err := e.Checker(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ops := lin.Convert(h)
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
	}
}
