package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDealBalancesLongestFirst(t *testing.T) {
	w := map[string]float64{"TestA": 100, "TestB": 60, "TestC": 50, "TestD": 10}
	groups := deal([]string{"TestD", "TestC", "TestB", "TestA", "TestNew"}, w, nil, 2)
	load := func(g []string) (s float64) {
		for _, n := range g {
			if v, ok := w[n]; ok {
				s += v
			} else {
				s += 5
			}
		}
		return s
	}
	if len(groups) != 2 || len(groups[0])+len(groups[1]) != 5 {
		t.Fatalf("groups %v: every test once", groups)
	}
	// longest first: A alone on one side, B+C(+D or the new one) on the other
	if a, b := load(groups[0]), load(groups[1]); a != 115 && b != 115 {
		t.Fatalf("loads %v and %v, want 110/115 split (A+D+new vs B+C)", a, b)
	}
}

func TestWeightsRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.txt")
	tests := []*test{{name: "TestB", elapsed: 2.25}, {name: "TestA", elapsed: 10}, {name: "TestP", elapsed: 20, paused: true}}
	// TestK was not run (-run): its weight is kept; TestB's old one is replaced by this run's
	if err := writeWeights(p, tests, map[string]string{"TestA": "docker"}, 4, map[string]float64{"TestK": 7, "TestB": 99}); err != nil {
		t.Fatal(err)
	}
	got, groups := readWeights(p)
	if len(groups) != 1 || groups["TestA"] != "docker" {
		t.Fatalf("groups read back %v", groups)
	}
	// a parallel test adds its time over -parallel to its shard's wall time
	if len(got) != 4 || got["TestA"] != 10 || got["TestB"] != 2.2 && got["TestB"] != 2.3 || got["TestP"] != 5 || got["TestK"] != 7 {
		t.Fatalf("read back %v", got)
	}
	if m, _ := readWeights(filepath.Join(t.TempDir(), "missing")); len(m) != 0 {
		t.Fatalf("a missing file gives %v", m)
	}
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), "#") {
		t.Fatalf("no header line: %q", b)
	}
}

// A failed shard prints each failed test's whole output (the CI log keeps only its tail) and a FAIL line;
// a passed one prints one line.
func TestReportShowsFailedTestsOutput(t *testing.T) {
	var w bytes.Buffer
	report(&w, "p", 1, 2, []*test{{name: "TestOK", action: "pass"}}, nil, nil, time.Second)
	if s := w.String(); !strings.HasPrefix(s, "ok  \tp [shard 1/2: 1 passed") || strings.Count(s, "\n") != 1 {
		t.Fatalf("passed shard printed %q", s)
	}
	w.Reset()
	tests := []*test{{name: "TestOK", action: "pass", output: []string{"quiet\n"}},
		{name: "TestBad", action: "fail", output: []string{"=== RUN TestBad\n", "boom\n"}},
		{name: "TestHung", action: ""}}
	report(&w, "p", 2, 2, tests, []string{"FAIL\n"}, errors.New("exit status 1"), time.Second)
	s := w.String()
	for _, want := range []string{"--- output of TestBad (shard 2/2) ---\n=== RUN TestBad\nboom\n", "--- output of TestHung", "FAIL\tp [shard 2/2: exit status 1]"} {
		if !strings.Contains(s, want) {
			t.Fatalf("failed shard's report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "quiet") {
		t.Fatalf("a passed test's output was printed:\n%s", s)
	}
}

// A group's tests go to one shard together, however light each is.
func TestDealKeepsAGroupTogether(t *testing.T) {
	w := map[string]float64{"TestD1": 30, "TestD2": 30, "TestD3": 30, "TestA": 50, "TestB": 40}
	g := map[string]string{"TestD1": "docker", "TestD2": "docker", "TestD3": "docker"}
	out := deal([]string{"TestA", "TestD1", "TestB", "TestD2", "TestD3"}, w, g, 3)
	for _, shard := range out {
		n := 0
		for _, name := range shard {
			if g[name] == "docker" {
				n++
			}
		}
		if n != 0 && n != 3 {
			t.Fatalf("the docker group was split: %v", out)
		}
	}
}

// A test's weight is its wall time with its parallel subtests, which go's own Elapsed for it leaves out
// (TestEveryControlIsFlagged's 20 runs weighed 0 s); a parallel test's runs from its resumption.
func TestEventsTimeParallelSubtests(t *testing.T) {
	lines := []string{
		`{"Time":"2026-12-05T10:00:00Z","Action":"run","Test":"TestSeq"}`,
		`{"Time":"2026-12-05T10:00:00Z","Action":"run","Test":"TestSeq/a"}`,
		`{"Time":"2026-12-05T10:00:00Z","Action":"pause","Test":"TestSeq/a"}`,
		`{"Time":"2026-12-05T10:00:01Z","Action":"cont","Test":"TestSeq/a"}`,
		`{"Time":"2026-12-05T10:00:30Z","Action":"pass","Test":"TestSeq/a","Elapsed":29}`,
		`{"Time":"2026-12-05T10:00:30Z","Action":"pass","Test":"TestSeq","Elapsed":0}`,
		`{"Time":"2026-12-05T10:00:30Z","Action":"run","Test":"TestPar"}`,
		`{"Time":"2026-12-05T10:00:30Z","Action":"pause","Test":"TestPar"}`,
		`not json`,
		`{"Time":"2026-12-05T10:00:40Z","Action":"cont","Test":"TestPar"}`,
		`{"Time":"2026-12-05T10:00:48Z","Action":"pass","Test":"TestPar","Elapsed":8}`,
	}
	tests, stray := readEvents(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if len(tests) != 2 || len(stray) != 1 {
		t.Fatalf("tests %d, stray %q", len(tests), stray)
	}
	if s, p := tests[0], tests[1]; s.name != "TestSeq" || s.elapsed != 30 || s.paused || p.elapsed != 8 || !p.paused || p.action != "pass" {
		t.Fatalf("TestSeq %+v, TestPar %+v", *s, *p)
	}
}
