package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/runner"
)

// readReport is a report's text and the command its Steps section gives.
func readReport(t *testing.T, path string) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	m := regexp.MustCompile("(?s)## Steps to reproduce\n\n```sh\n([^\n]+)\n```").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no command in the report's steps:\n%s", text)
	}
	words, err := runner.SplitCommand(m[1])
	if err != nil || len(words) < 3 || words[0] != "lockcheck" || words[1] != "run" {
		t.Fatalf("the report's command %q is not a lockcheck run (%v)", m[1], err)
	}
	return text, words[1:]
}

func readResultsStory(t *testing.T, dir string) report.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Story == nil {
		t.Fatalf("%s: no story", dir)
	}
	return r
}

// lockcheck report on the naive control's run: every section a maintainer reads, the story as the actual
// behaviour, a proof of records that parse, and a command that, run again, fails the same way.
func TestBugReportReproduces(t *testing.T) {
	code, dir := run(t, "run", "--lock", "naive", "--time", "4s", "--quiet", "1s", "--clients", "4", "--seed", "3")
	if code != exitInvalid {
		t.Fatalf("the naive run: exit %d, want %d", code, exitInvalid)
	}
	if code := execute(context.Background(), []string{"report", dir}); code != 0 {
		t.Fatalf("report: exit %d", code)
	}
	text, cmd := readReport(t, filepath.Join(dir, "report.md"))
	res := readResultsStory(t, dir)
	if !strings.HasPrefix(text, report.ReportMarker+"# ") {
		t.Errorf("the report does not open with its marker and a title:\n%s", text)
	}
	for _, want := range []string{"two owners held lock-0 at once", "## Affected", "| server | Redis server v=",
		"| persistence | none |", "## Expected", "## Actual\n\n" + res.Story.Text, "## Proof", "## How often it reproduces",
		"## Fault timeline", filepath.Join(dir, "history.jsonl"), "What the application does: 4 clients",
		// The title block says which catalog entry this is (the naive lock's plain DEL), and Expected says
		// the promise as a lease lock makes it, and which side of the lease this run fell on.
		"\n> known: `design-unconditional-unlock`", "promises exclusion only within the lease", "This run fell "} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	proof := regexp.MustCompile("(?s)```jsonl\n(.*?)```").FindStringSubmatch(text)
	if proof == nil {
		t.Fatalf("no proof excerpt:\n%s", text)
	}
	for _, l := range strings.Split(strings.TrimSpace(proof[1]), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("a proof line is not a record: %s", l)
		}
	}
	code, again := run(t, cmd...)
	if code != exitInvalid {
		t.Fatalf("the report's command %q: exit %d, want %d", cmd, code, exitInvalid)
	}
	if got := readResultsStory(t, again).Story.Kind; got != res.Story.Kind {
		t.Fatalf("the report's command failed with %q, the run with %q", got, res.Story.Kind)
	}
	// Written again over its own file; refused over one it did not write, a valid run, no run.
	if code := execute(context.Background(), []string{"report", dir}); code != 0 {
		t.Fatalf("report again: exit %d", code)
	}
	other := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(other, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := execute(context.Background(), []string{"report", "--out", other, dir}); code != exitUsage {
		t.Errorf("report over a file it did not write: exit %d, want %d", code, exitUsage)
	}
	if b, _ := os.ReadFile(other); string(b) != "mine\n" {
		t.Errorf("the file was overwritten: %q", b)
	}
	code, valid := run(t, "run", "--lock", "reentrant", "--time", "2s", "--quiet", "1s", "--clients", "2")
	if code != exitValid {
		t.Fatalf("the valid run: exit %d", code)
	}
	for _, args := range [][]string{{"report", valid}, {"report", filepath.Join(t.TempDir(), "none")}} {
		if code := execute(context.Background(), args); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}
