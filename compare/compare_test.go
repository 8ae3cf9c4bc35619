package compare

import (
	"maps"
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
	rows, err := PerServer(ls, []string{"redis", "valkey@8.1.8"})
	if err != nil {
		t.Fatal(err)
	}
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
	if got, _ := PerServer(ls, []string{"valkey@8.1.8"}); len(got) != len(ls) || got[0].Name != "naive" || !slices.Contains(got[0].Args, "valkey@8.1.8") {
		t.Fatalf("one server: rows %+v", got)
	}
	// Issue 36 item 11: a server named twice, or an empty name, ran every row twice on one server.
	for _, servers := range [][]string{{"redis", "redis"}, {"", ""}, {"redis", " "}} {
		if got, err := PerServer(ls, servers); err == nil {
			t.Errorf("--servers %q: accepted, %d rows", servers, len(got))
		}
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

// A team's lease per row (--row-lease) reaches that row's cells as the flag the row is timed by, over the
// shared --lease and --watchdog, also on the row's twins on other servers; the other rows keep the shared
// value. A name that is no row run is refused.
func TestRowLease(t *testing.T) {
	ls, ss, err := Select("naive,redis-semaphore-single,aioredlock-redlock", "S1", false)
	if err != nil {
		t.Fatal(err)
	}
	ls, err = PerServer(ls, []string{"redis", "valkey@8.1.8"})
	if err != nil {
		t.Fatal(err)
	}
	set := Settings{Lease: "10s", Watchdog: "30s", Rows: map[string]string{"aioredlock-redlock": "20s", "redis-semaphore-single": "5s"}}
	if err := set.CheckRows(ls); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"naive": {"--lease", "10s"}, "redis-semaphore-single": {"--watchdog", "5s"},
		"aioredlock-redlock": {"--lease", "20s"}}
	cases := Suite(ls, ss, 1, set, nil).Cases
	if len(cases) != 6 {
		t.Fatalf("%d cases, want 6 (3 rows on 2 servers)", len(cases))
	}
	for _, c := range cases {
		base, _, _ := strings.Cut(c.Entry, "@")
		w := want[base]
		i := slices.Index(c.Args, w[0])
		if i < 0 || c.Args[i+1] != w[1] || slices.Contains(c.Args, "2s") {
			t.Errorf("%s: args %v; want %s %s", c.ID, c.Args, w[0], w[1])
		}
	}
	if got := strings.Join(set.Shown(), " "); got != "--lease 10s --watchdog 30s --row-lease aioredlock-redlock=20s --row-lease redis-semaphore-single=5s" {
		t.Errorf("shown as %q", got)
	}
	if err := (Settings{Rows: map[string]string{"aioredlock": "20s"}}).CheckRows(ls); err == nil {
		t.Error("a lease for no row run: accepted")
	}
}

// The rows of issue 39's libraries: named only (their runtimes would slow the default table), and predicted
// by the reference's reasoning for what each does: python-redis-lock on Sentinel takes its lock on the primary
// with no WAIT (1N: S6 violates, not RS's "mitigated"), aioredlock checks the validity (S2 safe) but its
// extend sets a free key (S11), RedlockMutex checks none (S2 violates), and redis-semaphore's refresh timer
// freezes with its holder as Redisson's watchdog does (S11 on one node).
func TestNewLibraryRows(t *testing.T) {
	want := map[string]map[string]string{
		"python-redis-lock-sentinel": {"S6": Violates, "S11": Safe},
		"aioredlock-redlock":         {"S2": Safe, "S11": Violates, "S6": ""},
		"redis-semaphore-redlock":    {"S2": Violates, "S7": Violates, "S11": Violates},
		"redis-semaphore-single":     {"S8": NotApplicable, "S11": Violates},
		"spring-integration-single":  {"S11": Safe},
		"python-redis-lock-single":   {"S11": Safe},
	}
	names := strings.Join(slices.Sorted(maps.Keys(want)), ",")
	ls, ss, err := Select(names, "", false)
	if err != nil || len(ls) != len(want) {
		t.Fatalf("Select(%s): %d rows, %v", names, len(ls), err)
	}
	defaults, _, _ := Select("", "", false)
	for _, l := range ls {
		if !l.Named || slices.ContainsFunc(defaults, func(d Lock) bool { return d.Name == l.Name }) {
			t.Errorf("%s: in the default table", l.Name)
		}
		for _, sc := range ss {
			p, ok := want[l.Name][sc.ID] // "": the scenario does not apply to the row
			if ok && (sc.Applies(l) != (p != "") || p != "" && sc.Prediction(l) != p) {
				t.Errorf("%s %s: applies %v, predicted %q; want %q", l.Name, sc.ID, sc.Applies(l), sc.Prediction(l), p)
			}
		}
	}
}
