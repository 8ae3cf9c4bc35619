package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/runner"
)

// A binary `make build` stamped (-X main.version) records that version in every run's versions, as
// `lockcheck version` prints it: results.json said "dev".
func TestRunsRecordTheStampedVersion(t *testing.T) {
	old, oldCommit := version, commit
	t.Cleanup(func() { version, commit = old, oldCommit; stampRunner() })
	version, commit = "v9.8.7-test", "0123456789abcdef"
	stampRunner()
	ver, rev, _ := buildFacts()
	v := runner.Versions()
	if v["lockcheck"] != "v9.8.7-test" || v["lockcheck"] != ver || v["lockcheck-commit"] != rev {
		t.Fatalf("runner's versions %v, lockcheck version says %s %s", v, ver, rev)
	}
}

// shrink --help and docs/shrink.md say the same default for --checker: the kind the story leads with, the
// earliest among equals (the help said "the one whose violation came first").
func TestShrinkCheckerDefaultAsDocumented(t *testing.T) {
	usage := newShrinkCmd().Flags().Lookup("checker").Usage
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "shrink.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"overlap", "lost", "not told", "legal order", "earliest"} {
		if !strings.Contains(usage, want) || !strings.Contains(string(doc), want) {
			t.Errorf("--checker's default: %q in the help %v, in docs/shrink.md %v", want, strings.Contains(usage, want), strings.Contains(string(doc), want))
		}
	}
	if strings.Contains(usage, "came first") {
		t.Errorf("help: %s", usage)
	}
}
