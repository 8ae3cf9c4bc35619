package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/locks/worker"
)

// Bad input to bisect is one line and exit 254, before anything is built or run. The release list is the
// Go module proxy's answer as recorded on this machine (locks/worker/testdata), which lacks v4.0.x.
func TestBisectBadInput(t *testing.T) {
	b, err := os.ReadFile("../../locks/worker/testdata/releases/redsync-v4-list.txt")
	if err != nil {
		t.Fatal(err)
	}
	saved := listReleases
	defer func() { listReleases = saved }()
	listReleases = func(_ context.Context, r worker.Releases) ([]string, error) { return r.Stable(b) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--client", "redsync", "--good", "v4.12.1", "--bad", "v4.11.0", "nosuch"}, `no repro "nosuch"`},
		{[]string{"--client", "redsync", "--good", "v4.12.1", "--bad", "v4.12.1", "redsync-extend-lost-lock"}, "the same release"},
		{[]string{"--client", "redsync", "--good", "v4.0.4", "--bad", "v4.11.0", "redsync-extend-lost-lock"}, "--good v4.0.4 is not a stable release in the registry's list"},
		{[]string{"--client", "redsync", "--good", "v4.12.1-rc.1", "--bad", "v4.11.0", "redsync-extend-lost-lock"}, "is not a stable release"},
		{[]string{"--client", "redisson", "--good", "3.16.7", "--bad", "3.16.6", "redsync-extend-lost-lock"}, "runs --client redsync, not redisson"},
		{[]string{"--client", "redsync", "--good", "v4.12.1", "--bad", "v4.11.0", "kleppmann-pause"}, "does not run a library's worker"},
		{[]string{"--client", "nosuch", "--good", "1", "--bad", "2", "kleppmann-pause"}, "no such worker"},
		{[]string{"--good", "v4.12.1", "--bad", "v4.11.0", "redsync-extend-lost-lock"}, "needs --client"},
		{[]string{"--client", "redsync", "--good", "v4.12.1", "--bad", "v4.11.0", "--seeds", "0", "redsync-extend-lost-lock"}, "--seeds"},
		{[]string{"--client", "redsync", "--good", "v4.12.1", "--bad", "v4.11.0"}, "name one catalog entry"},
	} {
		code, errs := runCaptured(t, t.TempDir(), append([]string{"bisect", "--results", t.TempDir()}, c.args...)...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bisect %v: exit %d %q; want 254 and one line with %q", c.args, code, errs, c.want)
		}
	}
}
