package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compare puts every lock, built-in or a user's spec, in one table over the same scenarios and seeds; each
// cell links to its runs, and the files a design doc needs are written.
func TestCompareTable(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	dir := filepath.Join(t.TempDir(), "cmp")
	spec := filepath.Join("..", "..", "examples", "locks", "setnx.yaml")
	code, out, errs := runSuite(t, "compare", "--locks", "naive,rlock-sentinel", "--scenarios", "S4,S6", "--seeds", "1",
		"--lock-spec", spec, "--parallel", "1", "--results", dir)
	if code != exitValid && code != exitUnknown {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var tab struct {
		Cells []struct {
			Lock, Scenario, Measured, Predicted string
			Runs                                []string
		} `json:"cells"`
		Costs []struct{ Lock string } `json:"costs"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil || json.Unmarshal(b, &tab) != nil {
		t.Fatalf("compare.json: %v", err)
	}
	if len(tab.Cells) != 6 || len(tab.Costs) != 3 {
		t.Fatalf("%d cells, %d cost rows; want 3 locks × 2 scenarios", len(tab.Cells), len(tab.Costs))
	}
	for _, c := range tab.Cells {
		switch {
		case c.Scenario == "S6" && c.Lock != "rlock-sentinel":
			if c.Measured != "n/a" {
				t.Errorf("%s/%s: a failover on one node is n/a, got %s", c.Lock, c.Scenario, c.Measured)
			}
		case len(c.Runs) != 1:
			t.Errorf("%s/%s: %d runs linked", c.Lock, c.Scenario, len(c.Runs))
		default:
			if _, err := os.Stat(filepath.Join(dir, c.Runs[0], "history.jsonl")); err != nil {
				t.Errorf("%s/%s: its run is not kept: %v", c.Lock, c.Scenario, err)
			}
			if c.Lock == "naive" && c.Predicted != "violates" || c.Lock == "setnx" && c.Predicted != "" {
				t.Errorf("%s/%s: prediction %q", c.Lock, c.Scenario, c.Predicted)
			}
		}
	}
	for _, f := range []string{"compare.md", "index.html"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !strings.Contains(string(b), "setnx") {
			t.Errorf("%s: %v, or no row for the spec lock", f, err)
		}
	}
	if dom := browse(t, "file://"+filepath.Join(dir, "index.html"), "compare.png"); attr(t, dom, "compare", "data-rendered") != "yes" {
		t.Error("the compare page's charts did not render")
	}
}

// A scenario or a lock lockcheck does not know is bad input, said in one line.
func TestCompareBadInput(t *testing.T) {
	t.Parallel() // child lockcheck processes, fault-free or far from any timing edge
	for _, args := range [][]string{{"--scenarios", "S99"}, {"--locks", "nosuch"}, {"--seeds", "0"},
		{"--lease", "soon"}, {"--watchdog", "-1s"}, {"--hold", "2s-1s"}, {"--clients", "-2"},
		{"--quick", "--servers", "redis,redis"}, {"--quick", "--servers", ","}, // issue 36 item 11: each row ran twice
		{"--row-lease", "nosuch=3s"}, {"--locks", "naive", "--row-lease", "naive=soon"}, {"--row-lease", "naive"}} {
		code, _, errs := runSuite(t, append([]string{"compare", "--results", t.TempDir()}, args...)...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want 254 and one line", args, code, errs)
		}
	}
}

// compare for a team's own setup: its lease, watchdog, hold and clients reach every cell, and a row's own
// lease (--row-lease) that row's (each run's own results.json says so), the estimate is the first line, every run and every cell says its outcome in
// words, and the table ends with the paragraph that names the safer row.
func TestCompareTeamSettings(t *testing.T) {
	t.Parallel() // child lockcheck processes; the verdicts are the S4 cells' of every seed (naive 5/5, fenced 0/5)
	dir := filepath.Join(t.TempDir(), "cmp")
	code, out, errs := runSuite(t, "compare", "--locks", "naive,fenced", "--scenarios", "S4", "--seeds", "2",
		"--lease", "3s", "--watchdog", "5s", "--row-lease", "fenced=6s", "--hold", "200ms-500ms", "--clients", "3", "--parallel", "2", "--results", dir)
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if !strings.HasPrefix(lines[0], "lockcheck: compare: estimate ") {
		t.Errorf("the first line is not the estimate: %q", lines[0])
	}
	for _, want := range []string{"naive × S4 seed 1: violated", "naive × S4 seed 2: violated", "fenced × S4 seed 1: held",
		"cell naive × S4 clock jump on a node: violated on 2 of 2 seeds", "cell fenced × S4 clock jump on a node: held on 2 of 2"} {
		if !strings.Contains(errs, want) {
			t.Errorf("progress lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "(want ") {
		t.Errorf("progress speaks of expectations, not outcomes:\n%s", errs)
	}
	var tab struct {
		Cells []struct {
			Lock string
			Runs []string
		} `json:"cells"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil || json.Unmarshal(b, &tab) != nil {
		t.Fatalf("compare.json: %v", err)
	}
	runs := 0
	for _, c := range tab.Cells {
		for _, r := range c.Runs {
			runs++
			var res struct {
				Options struct {
					Lease, Watchdog, Hold string
					Clients               int
				} `json:"options"`
				Ran string `json:"ran"`
			}
			b, err := os.ReadFile(filepath.Join(dir, r, "results.json"))
			if err != nil || json.Unmarshal(b, &res) != nil {
				t.Fatalf("%s: results.json: %v", r, err)
			}
			o := res.Options
			timed := o.Lease == "3s"
			if c.Lock == "fenced" {
				timed = o.Watchdog == "6s"
			}
			if !timed || o.Hold != "200ms-500ms" || o.Clients != 3 {
				t.Errorf("%s: options %+v; want the team's lease 3s (fenced's watchdog 6s), hold 200ms-500ms, 3 clients", r, o)
			}
			// The cell's progress line says what ran as the run's own results.json does, word for word.
			cellLine := ""
			for _, l := range lines {
				if strings.HasPrefix(l, "cell "+c.Lock+" × S4 ") {
					cellLine = l
				}
			}
			if res.Ran == "" || !strings.HasSuffix(cellLine, ". What ran: "+res.Ran) {
				t.Errorf("%s: the cell's progress line %q does not end with results.json's ran %q", r, cellLine, res.Ran)
			}
		}
	}
	if runs != 4 {
		t.Errorf("%d runs in the table, want 4", runs)
	}
	if !strings.Contains(out, "Settings passed to every cell: --lease 3s --watchdog 5s --hold 200ms-500ms --clients 3 --row-lease fenced=6s") ||
		!strings.Contains(out, "Answer for --lease 3s --watchdog 5s --hold 200ms-500ms --clients 3 --row-lease fenced=6s on the host's redis-server: fenced (single) violated least on ") ||
		!strings.Contains(out, ": in 0 of 2 runs; naive (single) in 2 of 2") { // 2 seeds: within their noise
		t.Errorf("the table does not show the settings or does not end with the answer naming fenced:\n%s", out)
	}
}

// With --servers the answer ranks the first server's rows only and the servers paragraph sets each row
// beside its twin: naive violates under S4 on every seed on both servers (2/2 on each in docs/compare.md's
// full table), so they do not differ, and compare.json has the paragraph as "servers".
func TestCompareServers(t *testing.T) {
	t.Parallel() // child lockcheck processes, real redis-server and valkey-server
	dir := filepath.Join(t.TempDir(), "cmp")
	code, out, errs := runSuite(t, "compare", "--locks", "naive", "--scenarios", "S4", "--seeds", "2",
		"--servers", "redis,valkey@8.1.8", "--parallel", "2", "--results", dir)
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	const servers = "Servers: on valkey@8.1.8 against redis, they do not differ: every cell decided on both (1) violated on the same share of its runs on each."
	for _, want := range []string{"cell naive@valkey@8.1.8 × S4 clock jump on a node: violated on 2 of 2 seeds",
		"Answer for the default leases on redis: only naive (single) was measured: it violated in 2 of 2 runs", servers} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errs)
		}
	}
	var tab struct {
		Servers string `json:"servers"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil || json.Unmarshal(b, &tab) != nil || tab.Servers != servers {
		t.Errorf("compare.json's servers: %q (%v)", tab.Servers, err)
	}
}
