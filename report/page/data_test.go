package page

import (
	"slices"
	"testing"
)

// A long run's sets are cut to the cap: exactly n kept, in order, every marked item first (the overlaps).
func TestSampleKeepsMarkedItems(t *testing.T) {
	items := make([]int, 10_000)
	for i := range items {
		items[i] = i
	}
	marked := func(i int) bool { return i%7 == 0 } // 1429 of them
	out, all := sample(items, 2500, marked)
	if len(out) != 2500 || !all || !slices.IsSorted(out) {
		t.Fatalf("kept %d (all marked: %v, sorted: %v), want 2500, true, true", len(out), all, slices.IsSorted(out))
	}
	n := 0
	for _, v := range out {
		if marked(v) {
			n++
		}
	}
	if n != 1429 {
		t.Fatalf("kept %d of the 1429 marked items", n)
	}
	// More marked items than room: the cap holds, and the page is told not every one is drawn.
	out, all = sample(items, 1000, marked)
	if len(out) != 1000 || all {
		t.Fatalf("kept %d (all marked: %v), want 1000, false", len(out), all)
	}
	if out, all = sample(items[:10], 2500, marked); len(out) != 10 || !all {
		t.Fatalf("a short set was cut: %d", len(out))
	}
}
