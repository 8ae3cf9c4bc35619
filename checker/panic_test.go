package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

type panicking struct{}

func (panicking) Name() string { return "panicking" }
func (panicking) Check(context.Context, *history.History) Result {
	var m map[string]int
	m["x"]++ // a nil-map write: the kind of bug a checker can have
	return Result{Valid: Valid}
}

type fine struct{}

func (fine) Name() string { return "fine" }
func (fine) Check(context.Context, *history.History) Result {
	return Result{Valid: Valid, Summary: "ok"}
}

// A panicking checker gives unknown for its own row and the others still run (issue 24).
func TestPanickingCheckerIsUnknown(t *testing.T) {
	rs, v := Run(context.Background(), &history.History{}, panicking{}, fine{})
	if v != Unknown || len(rs) != 2 || rs[0].Valid != Unknown || rs[1].Valid != Valid {
		t.Fatalf("verdict %v, rows %+v", v, rs)
	}
	if rs[0].Checker != "panicking" || !strings.Contains(rs[0].Summary, "the checker failed") {
		t.Fatalf("row %+v", rs[0])
	}
}
