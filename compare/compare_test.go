package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/suite"
)

// A row made for one scenario (S9's client-clock primitives) adds runs to that column only, and S9 adds
// runs to those rows only; every scenario of the reference is selectable.
func TestSuiteOnlyRows(t *testing.T) {
	ls, ss, err := Select("", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(Unmeasured) != 0 || len(ss) != 11 {
		t.Fatalf("%d scenarios, unmeasured %v; want S1-S11 all measured", len(ss), Unmeasured)
	}
	ids := func(s *suite.Suite) []string {
		var out []string
		for _, c := range s.Cases {
			out = append(out, c.ID)
		}
		return out
	}
	got := ids(Suite(ls, ss, 1, nil))
	for _, id := range got {
		lock, sc, _ := strings.Cut(id, "/")
		sc, _, _ = strings.Cut(sc, "/")
		if (lock == "pes" || lock == "fair") != (sc == "S9") {
			t.Errorf("case %s: the S9 rows and the S9 column go together only", id)
		}
	}
	for _, want := range []string{"pes/S9/1", "fair/S9/1"} {
		if !slices.Contains(got, want) {
			t.Errorf("no case %s", want)
		}
	}
	tab := Build(t.TempDir(), &suite.Report{}, ls, ss, 1)
	for _, c := range tab.Cells {
		if c.Lock == "pes" && c.Scenario == "S1" && (c.Measured != NotApplicable || c.Predicted != "") {
			t.Errorf("pes/S1: %s (ref %q); want n/a with no prediction", c.Measured, c.Predicted)
		}
		if c.Lock == "fair" && c.Scenario == "S9" && c.Predicted != Violates {
			t.Errorf("fair/S9 predicted %q; want the reference's fairness loss (violates)", c.Predicted)
		}
	}
}
