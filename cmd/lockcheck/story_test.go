package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// storyResults is what the story tests read of results.json.
type storyResults struct {
	Valid any `json:"valid"`
	Story struct {
		Kind, Checker, Key, Node, Told, Agree, Text string
		At                                          int64 `json:"at_ns"`
		Owners                                      []struct {
			Name    string
			Granted int64 `json:"granted_ns"`
		}
		Faults []struct {
			Fault string
			Start int64 `json:"start_ns"`
		}
	}
	Checkers []struct {
		Checker   string
		Valid     any
		Violation string
		At        int64 `json:"violation_at_ns"`
	}
	Faults []struct {
		Kind  string
		Start int64
	}
	ReadyMs int64 `json:"ready_ms"`
}

func readStory(t *testing.T, dir string) storyResults {
	t.Helper()
	var r storyResults
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("results.json in %s: %v", dir, err)
	}
	return r
}

// firstAt is when the story's violation began, else the earliest invalid checker's violation time: what
// every output calls the first violation.
func (r storyResults) firstAt() int64 {
	if r.Story.Kind != "" {
		return r.Story.At
	}
	at := int64(-1)
	for _, c := range r.Checkers {
		if c.Valid == false && c.Violation != "" && (at < 0 || c.At < at) {
			at = c.At
		}
	}
	return at
}

func secsText(ns int64) string { return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds()) }

// One run, read in every output a person sees it in: the terminal (the run's output.txt), its summary page,
// results.json, suite.json and suite's progress line, and compare's table. The story is the same text in
// each; the first violation's time is one figure on one clock (the workload's start) in each; and a key is
// named one way (never "n1/lock-1").
func TestStoryAndClockAgreeEverywhere(t *testing.T) {
	t.Parallel() // one 8 s child run, the naive control: flagged however loaded the machine
	dir := filepath.Join(t.TempDir(), "cmp")
	code, out, errs := runSuite(t, "compare", "--locks", "naive", "--scenarios", "S4", "--seeds", "1", "--parallel", "1",
		"--results", dir)
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var tab struct {
		Cells []struct {
			Measured   string
			MedianTTFV float64 `json:"median_first_violation_s"`
			Runs       []string
		} `json:"cells"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil || json.Unmarshal(b, &tab) != nil || len(tab.Cells) != 1 || len(tab.Cells[0].Runs) != 1 {
		t.Fatalf("compare.json: %v\n%s", err, b)
	}
	cell := tab.Cells[0]
	if cell.Measured != "violates" {
		t.Fatalf("the naive control on S4 measured %s", cell.Measured)
	}
	run := filepath.Join(dir, cell.Runs[0])
	res := readStory(t, run)
	story, first := res.Story.Text, res.firstAt()
	if story == "" || res.Story.Kind == "" || res.Story.Key == "" || len(res.Story.Owners) == 0 || first < 0 {
		t.Fatalf("no story with its parts, or no first violation: %+v", res)
	}
	if res.ReadyMs <= 0 {
		t.Fatalf("start-up is not its own figure: ready_ms %d", res.ReadyMs)
	}

	// The terminal: the verdict table leads with the story, states the clock once, and gives the time to
	// the first violation on it.
	suiteDir := filepath.Dir(run)
	term, err := os.ReadFile(filepath.Join(suiteDir, "output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	table := string(term[strings.Index(string(term), "\nlockcheck: lock "):])
	if lines := strings.SplitN(table, "\n", 5); len(lines) < 4 || lines[2] != story {
		t.Fatalf("the verdict does not lead with the story %q:\n%s", story, table)
	}
	if n := strings.Count(table, "times are seconds since the workload began"); n != 1 {
		t.Fatalf("the clock is stated %d times in the verdict:\n%s", n, table)
	}
	if want := "time to first violation: " + secsText(first) + " after the workload began"; !strings.Contains(table, want) {
		t.Fatalf("no %q in:\n%s", want, table)
	}
	for _, f := range res.Faults { // the coverage lines give each fault window's start on the same clock
		if !strings.Contains(table, f.Kind) || !strings.Contains(table, secsText(f.Start)) {
			t.Fatalf("fault %s at %s is not in the verdict:\n%s", f.Kind, secsText(f.Start), table)
		}
	}

	// The summary page: the same story and the same first violation.
	page, err := os.ReadFile(filepath.Join(run, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(story) // the page's data is JSON, escaped as json.Marshal does
	if !strings.Contains(string(page), `"story":`+string(js)) {
		t.Fatalf("the page's banner data lacks the story %s", js)
	}
	if !strings.Contains(string(page), fmt.Sprintf(`"at":%g`, math.Round(float64(first)/1e6)/1e3)) {
		t.Fatalf("the page's first violation is not at %s", secsText(first))
	}

	// suite.json and the progress line under the run's.
	var rep struct {
		Outcomes []struct {
			Story, Violation string
			FirstNs          int64 `json:"first_violation_ns"`
		}
	}
	b, err = os.ReadFile(filepath.Join(dir, "suite.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Outcomes) != 1 {
		t.Fatalf("suite.json: %v\n%s", err, b)
	}
	if o := rep.Outcomes[0]; o.Story != story || o.Violation != story || o.FirstNs != first {
		t.Fatalf("suite.json: story %q, violation %q, first %d; want %q at %d", o.Story, o.Violation, o.FirstNs, story, first)
	}
	if !strings.Contains(errs, ": "+story+"\n") { // "naive × S4 seed 1: violated (13 s): STORY"
		t.Fatalf("compare's progress lines lack the story:\n%s", errs)
	}

	// compare's cell: the median of one run is that run's first violation, on the same clock.
	if got := fmt.Sprintf("%.3fs", cell.MedianTTFV); got != secsText(first) {
		t.Fatalf("compare's cell at %s, the run's first violation at %s", got, secsText(first))
	}

	// One name per key: the story's key, never a node-prefixed one, in every output.
	nodeFirst := regexp.MustCompile(`\bn[0-9]+/[A-Za-z]`)
	for name, text := range map[string]string{"terminal": table, "results.json": fmt.Sprint(res), "page": string(page)} {
		if !strings.Contains(text, res.Story.Key) || nodeFirst.MatchString(text) {
			t.Fatalf("%s: key %q missing, or a key named node-first (%q)", name, res.Story.Key, nodeFirst.FindString(text))
		}
	}
}

// The story of real failing runs names the owners, the key, the times and the fault, in one or two
// sentences; asserted on its parts, not its wording. The runs are the committed corpus's recordings (a
// Sentinel failover and a lagging failover that lost a lock, a triggered client-pause whose frozen holder
// overlapped the next, a clock jump that only porcupine flags), re-checked here, and a live naive control.
func TestStoryOfFailingRuns(t *testing.T) {
	t.Parallel() // re-checks of recorded histories, and one fault-free 4 s run
	type want struct {
		kind, fault string
		owners      int
		node        bool
	}
	corpus := map[string]want{
		"reentrant-sentinel-failover-seed3": {"lost-lock", "failover", 1, true},
		"reentrant-lagging-failover-seed1":  {"lost-lock", "lagging-failover", 1, true},
		"reentrant-client-pause":            {"overlap", "client-pause", 2, false},
		"redlock-clock":                     {"no-legal-order", "clock", 1, true},
	}
	root := t.TempDir()
	dirs := map[string]string{}
	for name := range corpus {
		dir := filepath.Join(root, name)
		gz, err := os.ReadFile(filepath.Join("..", "..", "checker", "testdata", "corpus", name+".jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil || os.WriteFile(filepath.Join(dir, "history.jsonl"), plain, 0o644) != nil {
			t.Fatal(err)
		}
		if code, out, errs := runSuite(t, "check", filepath.Join(dir, "history.jsonl")); code != exitInvalid {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, out, errs)
		}
		dirs[name] = dir
	}
	code, naive := run(t, "run", "--lock", "naive", "--lease", "300ms", "--hold", "400ms-1s", "--time", "4s", "--quiet", "1s",
		"--clients", "4", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("naive: exit %d", code)
	}
	corpus["naive"], dirs["naive"] = want{kind: "overlap", owners: 2}, naive
	for name, w := range corpus {
		file := "history.check.json"
		if name == "naive" {
			file = "results.json"
		}
		b, err := os.ReadFile(filepath.Join(dirs[name], file))
		var r storyResults
		if err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := r.Story
		if s.Kind != w.kind || s.Key == "" || (s.Node != "") != w.node || len(s.Owners) != w.owners || s.At <= 0 {
			t.Errorf("%s: parts %+v, want %+v", name, s, w)
			continue
		}
		if w.fault != "" && (len(s.Faults) == 0 || s.Faults[0].Fault != w.fault) {
			t.Errorf("%s: faults %+v, want %s", name, s.Faults, w.fault)
		}
		key := s.Key
		if s.Node != "" {
			key += " on " + s.Node
		}
		mentions := []string{key, secsText(s.At)}
		for _, o := range s.Owners {
			mentions = append(mentions, o.Name)
		}
		for _, f := range s.Faults {
			mentions = append(mentions, f.Fault, secsText(f.Start))
		}
		for _, m := range mentions {
			if !strings.Contains(s.Text, m) {
				t.Errorf("%s: the story does not name %q: %s", name, m, s.Text)
			}
		}
		if n := strings.Count(strings.TrimSuffix(s.Text, "."), ". "); n > 1 {
			t.Errorf("%s: %d sentences: %s", name, n+1, s.Text)
		}
	}
}
