package page

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
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

// A history may claim any time up to 2^62 ns (a century): the page's series stay bounded whatever it says.
func TestCenturyLongHistoryStaysSmall(t *testing.T) {
	end := history.MaxTime - 1
	inv := history.Record{Type: history.Invoke, ID: 1, Time: 1, Client: "c1", Thread: 1, Key: "k", F: "tryLock"}
	done := inv
	done.Type, done.Time = history.Ok, end
	h := &history.History{Ops: []history.Operation{history.OperationOf(inv, &done)},
		Sections: []history.Record{{Type: history.Section, Client: "c1", Thread: 1, Key: "k", Enter: 2, Exit: end}}}
	var b strings.Builder
	if err := Render(&b, Input{Results: &report.Results{Valid: checker.Valid}, History: h, Permits: 2}); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2<<20 {
		t.Fatalf("the page of a century-long history is %d bytes", b.Len())
	}
}

// A page's command to paste is rebuilt from the flags a file may give: the page of a history someone handed
// you never offers to run the command, address or path it names; it says what it left out (issue 36).
func TestPageCommandLeavesOutWhatAFileMayNotName(t *testing.T) {
	d := build(Input{Results: &report.Results{Valid: checker.Invalid}, History: &history.History{},
		Command: []string{"lockcheck", "run", "--lock=naive", "--client-cmd=sh -c 'touch x'", "--external-addrs=127.0.0.1:1", "--seed=3"}})
	if d.Command != "lockcheck run --lock=naive --seed=3" {
		t.Errorf("command %q", d.Command)
	}
	if !strings.Contains(d.LeftOut, "--client-cmd") || !strings.Contains(d.LeftOut, "--external-addrs") || strings.Contains(d.LeftOut, "\n") {
		t.Errorf("left out: %q", d.LeftOut)
	}
}
