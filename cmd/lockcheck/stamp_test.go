package main

import (
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
