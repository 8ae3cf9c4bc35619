package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The recorded command line (the history's meta record, the page's Reproduce line) never carries a
// password (issue 22, item 3); the rest of the line still reproduces the run.
func TestCommandLineRedactsSecrets(t *testing.T) {
	t.Parallel() // pure: no run
	cmd := newRunCmd()
	if err := cmd.ParseFlags([]string{"--backend", "external", "--external-addrs", "127.0.0.1:6379",
		"--external-password", "S3CRET-pw", "--lock", "naive"}); err != nil {
		t.Fatal(err)
	}
	line := strings.Join(commandLine(cmd, 7), " ")
	if strings.Contains(line, "S3CRET") {
		t.Fatalf("the password is in the recorded command line: %s", line)
	}
	for _, want := range []string{"--external-password=" + Redacted, "--external-addrs=127.0.0.1:6379", "--lock=naive", "--seed=7"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q missing from %s", want, line)
		}
	}
}

// check in a directory it cannot write to still gives its verdict and its exit code, saying which files it
// could not write, instead of exit 255 and no verdict (issue 22, item 15). The directory is made immutable
// (chattr +i), since root writes through a 0555 mode.
func TestCheckInReadOnlyDirectoryGivesItsVerdict(t *testing.T) {
	// Sequential: swaps os.Stderr (runCaptured).
	path := stalledHistory(t)
	dir := filepath.Dir(path)
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make a read-only directory here: %v %s", err, out)
	}
	defer exec.Command("chattr", "-i", dir).Run()
	code, stderr := runCaptured(t, "", "check", path)
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (the verdict); stderr: %s", code, exitInvalid, stderr)
	}
	if !strings.Contains(stderr, "were not written") {
		t.Fatalf("stderr does not say the files were not written: %s", stderr)
	}
}
