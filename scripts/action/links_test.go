package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace's results directory can come from the checkout, links and all (issue #29, item 5): the run
// step refuses, in one line with exit 254 and before lockcheck starts, a results directory that is a link,
// or that holds one (its runs, its log, the suite file the step writes, junit.xml), so that nothing is
// written, removed or uploaded through a link it did not make. lockcheck's own latest links are fine.
func TestActionResultsLinks(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, results, outside string)
		ok    bool
	}{
		{"results a link", func(t *testing.T, results, outside string) { symlink(t, outside, results) }, false},
		{"runs a link", func(t *testing.T, results, outside string) { symlink(t, outside, filepath.Join(results, "runs")) }, false},
		{"log a link", func(t *testing.T, results, outside string) {
			symlink(t, filepath.Join(outside, "precious"), filepath.Join(results, "lockcheck.log"))
		}, false},
		{"suite file a link", func(t *testing.T, results, outside string) {
			symlink(t, filepath.Join(outside, "precious"), filepath.Join(results, "action-suite.yaml"))
		}, false},
		{"deep link", func(t *testing.T, results, outside string) {
			symlink(t, outside, filepath.Join(results, "runs", "e_default_none_1", "x"))
		}, false},
		{"a run's own latest", func(t *testing.T, results, outside string) {
			symlink(t, "20261128T120000", filepath.Join(results, "runs", "e_default_none_1", "latest"))
		}, true},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			work, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "precious")
			if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// lockcheck stands in as a script that says it ran.
			ran := filepath.Join(outside, "ran")
			bin := filepath.Join(outside, "lockcheck")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			results := filepath.Join(work, "lockcheck-results")
			c.plant(t, results, outside)
			cmd := exec.Command("bash", filepath.Join(repo, "scripts", "action", "run.sh"), "run")
			cmd.Dir = work
			cmd.Env = append(baseEnv(), "INPUT_LOCK=reentrant", "INPUT_RESULTS=lockcheck-results", "LOCKCHECK_BIN="+bin)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
				t.Fatalf("the file outside the results was written through a link: %q", b)
			}
			_, rerr := os.Stat(ran)
			if c.ok {
				if rerr != nil {
					t.Fatalf("lockcheck did not run (%v): %s", err, stderr.String())
				}
				return
			}
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			errs := strings.TrimSpace(stderr.String())
			if code != 254 || strings.Contains(errs, "\n") || !strings.Contains(errs, "is a symbolic link") {
				t.Fatalf("exit %d, stderr %q: want 254 and one line naming the link", code, errs)
			}
			if rerr == nil {
				t.Fatal("lockcheck ran")
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
