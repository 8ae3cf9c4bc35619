package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/suite"
)

// table is a hand-built table: each row's cells as "S1:2/3" (violations/seeds) or "S6:n/a".
func table(set Settings, rows map[string][]string) *Table {
	ss := []Scenario{{ID: "S1", Name: "pause after acquire"}, {ID: "S5", Name: "crash and fast restart, no persistence"}, {ID: "S6", Name: "failover, asynchronous replication"}}
	t := &Table{Settings: set, Scenarios: ss}
	var names []string
	for n := range rows {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t.Locks = append(t.Locks, Lock{Name: n})
		for _, c := range rows[n] {
			id, v, _ := strings.Cut(c, ":")
			cell := Cell{Lock: n, Scenario: id, Measured: NotApplicable}
			if v != NotApplicable {
				var viol, seeds int
				fmt.Sscanf(v, "%d/%d", &viol, &seeds)
				cell.Violations, cell.Seeds, cell.Measured = viol, seeds, Safe
				if strings.HasSuffix(v, "!") { // every run failed
					cell.Errors, cell.Measured = seeds, "undecided"
				}
				if viol > 0 {
					cell.Measured = Violates
				}
			}
			t.Cells = append(t.Cells, cell)
		}
	}
	return t
}

// The answer names the safer row, the settings, the faults where it did better and by how much, and the
// caveats the cells show.
func TestAnswerNamesSaferRow(t *testing.T) {
	tab := table(Settings{Lease: "10s", Watchdog: "30s"}, map[string][]string{
		"redlock":  {"S1:0/3", "S5:3/3", "S6:n/a"},
		"sentinel": {"S1:3/3", "S5:2/3", "S6:1/1"},
	})
	got := tab.Answer()
	// S6 is n/a on redlock: the ranking rests on S1 and S5 alone (sentinel's S6 run does not count for it),
	// says on how many runs each share rests and that 6 runs cannot tell these shares apart; S5, where
	// redlock did worse, is "worse", not "no better".
	for _, want := range []string{
		"Answer for --lease 10s --watchdog 30s on the host's redis-server: ",
		"redlock (single) violated least on S1, S5, the scenarios every row was decided in: in 3 of 6 runs (under S5 crash and fast restart, no persistence)",
		"sentinel (single) in 5 of 6",
		"within the noise of these runs (two-sided Fisher exact p 0.55)",
		"did better under S1 pause after acquire (0/3 against 3/3)",
		"It did worse than sentinel under S5 crash and fast restart, no persistence (3/3 against 2/3)",
		"Not ranked on S6",
		"sentinel S6 ran one seed only",
		"Not measured (the fault needs what the row lacks): redlock S6",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("answer lacks %q:\n%s", want, got)
		}
	}
	if strings.HasPrefix(got, "Answer for --lease 10s --watchdog 30s: sentinel") {
		t.Errorf("the less safe row leads:\n%s", got)
	}
}

// Rows that violate alike, or never, name no safer row.
func TestAnswerTies(t *testing.T) {
	for _, tc := range []struct {
		rows map[string][]string
		want string
	}{
		{map[string][]string{"a": {"S1:0/3"}, "b": {"S1:0/3"}}, "no row violated in any run on S1, the scenarios every row was decided in (a 0/3, b 0/3), so none is safer"},
		{map[string][]string{"a": {"S1:3/3"}, "b": {"S1:3/3"}}, "no row is safer: every row violated in the same share of its runs on S1, the scenarios every row was decided in (a 3/3, b 3/3)"},
		// Two rows alike and safer than a third: the safer are named, not "no row violated".
		{map[string][]string{"a": {"S1:0/8"}, "b": {"S1:0/6"}, "c": {"S1:8/8"}}, "a (single) is the safer on S1, the scenarios every row was decided in: in 0 of 8 runs; b (single) alike, 0 of 6; c (single) in 8 of 8 (under S1 pause after acquire), beyond the noise of these runs (p 0.00)"},
		// Three seeds cannot tell 0/3 from 2/3.
		{map[string][]string{"a": {"S1:0/3"}, "c": {"S1:2/3"}}, "a (single) violated least on S1"},
		{map[string][]string{"a": {"S1:1/2"}}, "only a (single) was measured: it violated in 1 of 2 runs (under S1 pause after acquire)"},
		{map[string][]string{}, "no cell was measured"},
		// A row whose every run failed to start is not the safer one: it was not measured.
		{map[string][]string{"a": {"S1:1/3"}, "b": {"S1:0/3!"}}, "only a (single) was measured"},
	} {
		got := table(Settings{}, tc.rows).Answer()
		if !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "Answer for the default leases on the host's redis-server: ") {
			t.Errorf("%v: %q; want %q", tc.rows, got, tc.want)
		}
	}
}

// The team's settings reach every case: a row takes the lease or the watchdog its lock is timed by, and
// the hold and clients come after the scenario's own, so they win.
func TestSettingsReachEveryCase(t *testing.T) {
	ls, ss, err := Select("naive,rlock-sentinel", "S5", false)
	if err != nil {
		t.Fatal(err)
	}
	s := Suite(ls, ss, 2, Settings{Lease: "10s", Watchdog: "30s", Hold: "1s-2s", Clients: 4}, nil)
	if len(s.Cases) != 4 {
		t.Fatalf("%d cases", len(s.Cases))
	}
	last := func(args []string, flag string) string {
		v := ""
		for i, a := range args {
			if a == flag && i+1 < len(args) {
				v = args[i+1]
			}
		}
		return v
	}
	for _, c := range s.Cases {
		lease, flag := "10s", "--lease"
		if c.Entry == "rlock-sentinel" {
			lease, flag = "30s", "--watchdog"
		}
		if last(c.Args, flag) != lease || last(c.Args, "--hold") != "1s-2s" || last(c.Args, "--clients") != "4" {
			t.Errorf("%s: %v", c.ID, c.Args)
		}
	}
	var b bytes.Buffer
	tab := Build(t.TempDir(), &suite.Report{}, ls, ss, 2, Settings{Lease: "10s"})
	tab.Text(&b)
	if !strings.Contains(b.String(), "Settings passed to every cell: --lease 10s") || !strings.Contains(b.String(), "rlock-sentinel  sentinel") {
		t.Errorf("the table does not show the settings and each row's topology:\n%s", b.String())
	}
}

// twins is table with each row also on valkey@8.1.8 (PerServer's shape): base rows' cells, then the twins'.
func twins(base, other map[string][]string) *Table {
	rows := map[string][]string{}
	for n, cs := range base {
		rows[n] = cs
		rows[n+"@valkey@8.1.8"] = other[n]
	}
	t := table(Settings{}, rows)
	for i, l := range t.Locks {
		name, _, twin := strings.Cut(l.Name, "@")
		t.Locks[i].Args = []string{"--server", "redis"}
		if twin {
			t.Locks[i].Base, t.Locks[i].Args = name, []string{"--server", "valkey@8.1.8"}
		}
	}
	return t
}

// With --servers the answer ranks the first server's rows only (a lock is not "safer" than itself on
// another server), and the servers paragraph names the cells where a row and its twin differ, with how
// likely the seeds alone make that difference.
func TestServersAnswer(t *testing.T) {
	tab := twins(map[string][]string{
		"naive":    {"S1:5/5", "S5:5/5", "S6:n/a"},
		"sentinel": {"S1:5/5", "S5:2/5", "S6:0/5"},
		"fenced":   {"S1:0/5", "S5:5/5", "S6:n/a"},
	}, map[string][]string{
		"naive":    {"S1:5/5", "S5:5/5", "S6:n/a"},
		"sentinel": {"S1:5/5", "S5:3/5", "S6:0/5"},
		"fenced":   {"S1:5/5", "S5:5/5", "S6:n/a"},
	})
	got := tab.Answer()
	// Ranked on S1 and S5 only (S6 is n/a on two rows), on the first server's rows.
	if !strings.HasPrefix(got, "Answer for the default leases on redis: fenced (single) violated least on S1, S5, the scenarios every row was decided in: in 5 of 10 runs") ||
		strings.Contains(got, "@valkey") || !strings.Contains(got, "naive (single) in 10 of 10 (under S1 pause after acquire, S5 crash and fast restart, no persistence), beyond the noise") {
		t.Errorf("the answer ranks a row against its twin on another server:\n%s", got)
	}
	srv := tab.ServersAnswer()
	for _, want := range []string{
		"Servers: on valkey@8.1.8 against redis, 2 of the 7 cells decided on both differ",
		"sentinel S5 (3/5 against 2/5, p 1.00)",
		"beyond seed noise (p < 0.05): fenced S1 (5/5 against 0/5, p 0.01).",
	} {
		if !strings.Contains(srv, want) {
			t.Errorf("servers paragraph lacks %q:\n%s", want, srv)
		}
	}
	same := twins(map[string][]string{"naive": {"S1:2/2", "S5:1/2"}}, map[string][]string{"naive": {"S1:2/2", "S5:1/2"}})
	if got := same.ServersAnswer(); got != "Servers: on valkey@8.1.8 against redis, they do not differ: every cell decided on both (2) violated on the same share of its runs on each." {
		t.Errorf("alike servers: %q", got)
	}
	noisy := twins(map[string][]string{"naive": {"S1:0/2"}}, map[string][]string{"naive": {"S1:2/2"}})
	if got := noisy.ServersAnswer(); !strings.Contains(got, "naive S1 (2/2 against 0/2, p 0.33); none beyond seed noise") {
		t.Errorf("two seeds cannot tell the servers apart: %q", got)
	}
	if got := table(Settings{}, map[string][]string{"a": {"S1:1/2"}}).ServersAnswer(); got != "" {
		t.Errorf("no --servers, yet: %q", got)
	}
}

// Fisher's exact test against values computed by hand (hypergeometric sums).
func TestFisher(t *testing.T) {
	for _, tc := range []struct {
		a, b, c, d int
		want       float64
	}{
		{2, 0, 0, 2, 1.0 / 3},    // 2 of C(4,2)=6 tables as extreme
		{5, 0, 0, 5, 2.0 / 252},  // C(10,5)=252
		{3, 2, 2, 3, 1},          // the likeliest table
		{1, 0, 0, 0, 1},          // one run
		{4, 1, 0, 5, 10.0 / 210}, // 4 of 5 against 0 of 5: C(5,4)C(5,0) and its mirror, of C(10,4)=210
	} {
		if got := fisher(tc.a, tc.b, tc.c, tc.d); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("fisher(%d,%d,%d,%d) = %v, want %v", tc.a, tc.b, tc.c, tc.d, got, tc.want)
		}
	}
}

// A run whose fault never fired held untested: it is left out of the cell's runs, and the answer says which
// cells lost runs so (S7's partition waits for a grant in its window; long holds let it pass by).
func TestMissedFaultRunsAreLeftOut(t *testing.T) {
	tab := table(Settings{}, map[string][]string{
		"a": {"S1:0/5", "S5:1/3"},
		"b": {"S1:4/5", "S5:0/3"},
	})
	for i := range tab.Cells {
		if c := &tab.Cells[i]; c.Lock == "a" && c.Scenario == "S1" {
			c.Missed = 4
		}
	}
	got := tab.Answer()
	for _, want := range []string{
		"a (single) violated least on S1, S5, the scenarios every row was decided in: in 1 of 4 runs", // 1 decided S1 run and 3 S5 runs
		"The fault never fired on some seeds, whose runs held untested and are left out: a S1 (4 of 5)",
		"a S1 ran one seed only",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("answer lacks %q:\n%s", want, got)
		}
	}
	if c := (Cell{Seeds: 5, Missed: 4, Measured: Safe}); c.text() != "0/5, 4 missed" {
		t.Errorf("cell text %q", c.text())
	}
}

// A fenced row that violates points to its finding (H5); the table names each row's server beside its
// topology.
func TestFencedViolationsPointToTheirFinding(t *testing.T) {
	tab := table(Settings{}, map[string][]string{"fenced-sentinel": {"S1:0/5", "S6:2/5"}, "rlock-sentinel": {"S1:5/5", "S6:5/5"}})
	for i := range tab.Locks {
		if tab.Locks[i].Name == "fenced-sentinel" {
			tab.Locks[i].Class, tab.Locks[i].Args = Fenced, []string{"--topology", "sentinel"}
		}
	}
	if got := tab.Answer(); !strings.Contains(got, "fenced-sentinel's violations are finding H5") || !strings.Contains(got, "fenced-sentinel (sentinel)") {
		t.Errorf("answer: %s", got)
	}
	var b bytes.Buffer
	tab.Text(&b)
	if !strings.Contains(b.String(), "SERVER") || !strings.Contains(b.String(), "the host's redis-server") {
		t.Errorf("table:\n%s", b.String())
	}
}

// docs/compare.md quotes the answer compare gives for its measured table (the cells below, as that table
// has them): the quote is what Answer says for them now.
func TestDocsQuoteTheAnswer(t *testing.T) {
	cell := func(lock, sc string, viol, seeds, unknown int, measured string) Cell {
		return Cell{Lock: lock, Scenario: sc, Violations: viol, Seeds: seeds, Unknown: unknown, Measured: measured}
	}
	tab := &Table{Settings: Settings{Lease: "10s", Watchdog: "30s"}, Scenarios: []Scenario{{ID: "S1", Name: "pause after acquire"},
		{ID: "S4", Name: "clock jump on a node"}, {ID: "S5", Name: "crash and fast restart, no persistence"},
		{ID: "S6", Name: "failover, asynchronous replication"}}}
	for _, l := range []string{"redsync-redlock", "redisson-sentinel", "redisson-redlock-lib", "redis-py-sentinel"} {
		i := slices.IndexFunc(Locks, func(x Lock) bool { return x.Name == l })
		tab.Locks = append(tab.Locks, Locks[i])
	}
	tab.Cells = []Cell{
		cell("redsync-redlock", "S1", 0, 3, 0, Safe), cell("redsync-redlock", "S4", 3, 3, 0, Violates),
		cell("redsync-redlock", "S5", 3, 3, 0, Violates), cell("redsync-redlock", "S6", 0, 0, 0, NotApplicable),
		cell("redisson-sentinel", "S1", 0, 3, 0, Safe), cell("redisson-sentinel", "S4", 0, 3, 1, "undecided"),
		cell("redisson-sentinel", "S5", 0, 3, 0, Safe), cell("redisson-sentinel", "S6", 0, 3, 3, "undecided"),
		cell("redisson-redlock-lib", "S1", 0, 3, 3, "undecided"), cell("redisson-redlock-lib", "S4", 0, 3, 3, "undecided"),
		cell("redisson-redlock-lib", "S5", 0, 3, 3, "undecided"), cell("redisson-redlock-lib", "S6", 0, 0, 0, NotApplicable),
		cell("redis-py-sentinel", "S1", 0, 3, 0, Safe), cell("redis-py-sentinel", "S4", 3, 3, 0, Violates),
		cell("redis-py-sentinel", "S5", 3, 3, 0, Violates), cell("redis-py-sentinel", "S6", 1, 3, 0, Violates),
	}
	got := tab.Answer()
	doc, err := os.ReadFile("../docs/compare.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "\n> "+got+"\n") {
		t.Errorf("docs/compare.md does not quote the answer for its table's cells:\n%s", got)
	}
	// Its second table: two clients, S5 only.
	two := &Table{Settings: Settings{Lease: "10s", Watchdog: "30s", Clients: 2}, Scenarios: tab.Scenarios[2:3],
		Locks: []Lock{tab.Locks[1], tab.Locks[2]}, Cells: []Cell{cell("redisson-sentinel", "S5", 3, 3, 0, Violates),
			cell("redisson-redlock-lib", "S5", 3, 3, 0, Violates)}}
	if got := two.Answer(); !strings.Contains(string(doc), "\n> "+got+"\n") {
		t.Errorf("docs/compare.md does not quote the answer for its second table's cells:\n%s", got)
	}
}

// compare.md says what ran in each scenario in a run's own words (report.WhatRan), beside its flags.
func TestMarkdownSaysWhatRan(t *testing.T) {
	tab := table(Settings{}, map[string][]string{"naive": {"S1:1/1"}})
	tab.Cells[0].Ran = "4 clients, for 8s, each in a loop: tryLock lock-0."
	var b bytes.Buffer
	tab.Markdown(&b, time.Time{})
	if !strings.Contains(b.String(), "what ran in naive's cell: 4 clients, for 8s, each in a loop: tryLock lock-0.") {
		t.Errorf("compare.md:\n%s", b.String())
	}
}

// A cell's progress line says what ran in its runs' own words, results.json's "ran" (report.WhatRan), and
// a run that wrote no results adds none of its own.
func TestProgressSaysWhatRanAsResults(t *testing.T) {
	dir := t.TempDir()
	s := &suite.Suite{Cases: []suite.Case{suite.NewCase("naive/S1/1", "naive", 1, nil), suite.NewCase("naive/S1/2", "naive", 2, nil)}}
	ran := "2 clients, for 8s, each in a loop: tryLock lock-0 (wait up to 5s, lease 300ms), hold it 400ms-1s inside a critical section, then unlock."
	if err := os.MkdirAll(filepath.Join(dir, "runs", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (&report.Results{Valid: checker.Invalid, Ran: ran}).WriteJSON(filepath.Join(dir, "runs", "1")); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	p := NewProgress(&b, dir, s, []Lock{{Name: "naive"}}, []Scenario{{ID: "S1", Name: "pause after acquire"}})
	p.Each(suite.Outcome{Case: s.Cases[1], Verdict: "error", Dir: filepath.Join("runs", "2")}) // failed: no results.json
	p.Each(suite.Outcome{Case: s.Cases[0], Verdict: "invalid", Dir: filepath.Join("runs", "1")})
	want := "cell naive × S1 pause after acquire: violated on 1 of 2 seeds, undecided on 1 of 2 (see its runs). What ran: " + ran + "\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("progress:\n%s\nwant the cell line to end %q", b.String(), want)
	}
}
