package compare

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
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
	got := ids(Suite(ls, ss, 1, Settings{}, nil))
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
	tab := Build(t.TempDir(), &suite.Report{}, ls, ss, 1, Settings{})
	for _, c := range tab.Cells {
		if c.Lock == "pes" && c.Scenario == "S1" && (c.Measured != NotApplicable || c.Predicted != "") {
			t.Errorf("pes/S1: %s (ref %q); want n/a with no prediction", c.Measured, c.Predicted)
		}
		if c.Lock == "fair" && c.Scenario == "S9" && c.Predicted != Violates {
			t.Errorf("fair/S9 predicted %q; want the reference's fairness loss (violates)", c.Predicted)
		}
	}
}

// A cell's time to first violation counts from the moment the workload began (the meta record, once every
// client answered), not from the history's zero, which precedes the topology's and the workers' start: a
// Java row's 20 s of JVM start-up is not a slower finding.
func TestTTFVFromWorkloadStart(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "runs", "x")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"type":"meta","time":20000000000,"data":{}}` + "\n"
	if err := os.WriteFile(filepath.Join(run, "history.jsonl"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	res := report.Results{Valid: checker.Invalid, Checkers: []checker.Result{
		{Checker: "mutual-exclusion", Valid: checker.Invalid, Violation: "2 holders", At: 23_500_000_000}}}
	if err := res.WriteJSON(run); err != nil {
		t.Fatal(err)
	}
	l := Lock{Name: "naive", Class: OneNode}
	sc := Scenario{ID: "S1", Predict: map[Class]string{OneNode: Violates}}
	rep := &suite.Report{Outcomes: []suite.Outcome{{Case: suite.NewCase("naive/S1/1", "naive", 1, nil),
		Verdict: "invalid", FirstNs: 23_500_000_000, Dir: "runs/x"}}}
	c := Build(dir, rep, []Lock{l}, []Scenario{sc}, 1, Settings{}).Cells[0]
	if c.Measured != Violates || c.MedianTTFV != 3.5 {
		t.Fatalf("%s at %.1f s; want violates at 3.5 s (23.5 s on the history's clock, the workload began at 20 s)", c.Measured, c.MedianTTFV)
	}
}

// --servers repeats each row on every server after the first, beside it, with the base row's predictions
// (PredictLock included).
func TestPerServerRows(t *testing.T) {
	ls, ss, err := Select("rlock-single,naive", "S11", false)
	if err != nil {
		t.Fatal(err)
	}
	rows := PerServer(ls, []string{"redis", "valkey@8.1.8"})
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "naive naive@valkey@8.1.8 rlock-single rlock-single@valkey@8.1.8" {
		t.Fatalf("rows %s", got)
	}
	if a := rows[3].Args; a[len(a)-2] != "--server" || a[len(a)-1] != "valkey@8.1.8" {
		t.Fatalf("args %v", a)
	}
	if p, q := ss[0].Prediction(rows[2]), ss[0].Prediction(rows[3]); p != Violates || q != p {
		t.Fatalf("S11 predicts %q for rlock-single and %q on Valkey", p, q)
	}
	if got := PerServer(ls, []string{"valkey@8.1.8"}); len(got) != len(ls) || got[0].Name != "naive" || !slices.Contains(got[0].Args, "valkey@8.1.8") {
		t.Fatalf("one server: rows %+v", got)
	}
}

// docs/compare.md's table of the real libraries' rows says which are in the default table, as Locks has it.
func TestDocsSayWhichRowsAreDefault(t *testing.T) {
	b, err := os.ReadFile("../docs/compare.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 4 || !strings.HasPrefix(line, "| `") || (cells[2] != "yes" && cells[2] != "no") {
			continue
		}
		for _, n := range strings.Split(strings.TrimPrefix(cells[0], "| "), ", ") {
			n = strings.Trim(n, "`")
			i := slices.IndexFunc(Locks, func(l Lock) bool { return l.Name == n })
			if i < 0 {
				t.Errorf("docs/compare.md names the row %s, which compare does not have", n)
				continue
			}
			rows++
			if inDefault := !Locks[i].Named; inDefault != (cells[2] == "yes") {
				t.Errorf("docs/compare.md: %s in the default table: %s; compare: %v", n, cells[2], inDefault)
			}
		}
	}
	if rows < 8 {
		t.Fatalf("%d rows read from docs/compare.md's table", rows)
	}
}
