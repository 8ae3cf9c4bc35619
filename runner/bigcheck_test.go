package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

// A synthetic history in the real format checks valid, and one beyond the timeline's bound gets no HTML,
// a note saying why, and the same verdicts.
func TestCheckBigHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	n, err := histgen.WriteFile(path, histgen.Spec{Ops: 5000, Keys: 50, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != checker.Valid || len(res.Checkers) < 3 || res.Files["html"] == "" {
		t.Fatalf("%d generated operations: %v, %+v, files %v", n, res.Valid, res.Checkers, res.Files)
	}
	old := maxTimeline
	maxTimeline = n - 1
	defer func() { maxTimeline = old }()
	_ = os.Remove(res.Files["html"])
	big, err := Check(context.Background(), path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "history.check.html")); err == nil || big.Files["html"] != "" {
		t.Fatalf("an HTML beyond the bound: %v", big.Files)
	}
	if !strings.Contains(strings.Join(big.Notes, "\n"), "no HTML") {
		t.Fatalf("no note says why there is no HTML: %q", big.Notes)
	}
	if big.Valid != res.Valid || len(big.Checkers) != len(res.Checkers) {
		t.Fatalf("without the timeline: %v %d checkers, with it: %v %d", big.Valid, len(big.Checkers), res.Valid, len(res.Checkers))
	}
	for i := range big.Checkers {
		if big.Checkers[i].Valid != res.Checkers[i].Valid || big.Checkers[i].Checker != res.Checkers[i].Checker {
			t.Fatalf("checker %d: %+v, with the timeline %+v", i, big.Checkers[i], res.Checkers[i])
		}
	}
}
