package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/bisect"
	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/repro"
	"github.com/lockcheck/lockcheck/suite"
)

// Bad input to bisect is one line and exit 254, before anything is built or run. The release list is the
// Go module proxy's answer as recorded on this machine (clients/worker/testdata), which lacks v4.0.x.
func TestBisectBadInput(t *testing.T) {
	// Sequential: swaps os.Stderr (runCaptured).
	b, err := os.ReadFile("../../clients/worker/testdata/releases/redsync-v4-list.txt")
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
		// A design limit: no release fixes it, said before anything is listed or built.
		{[]string{"--client", "redis-py", "--good", "5.3.1", "--bad", "4.0.0", "redis-py-sentinel-failover"}, "no release fixes it (a design limit"},
	} {
		code, errs := runCaptured(t, t.TempDir(), append([]string{"bisect", "--results", t.TempDir()}, c.args...)...)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bisect %v: exit %d %q; want 254 and one line with %q", c.args, code, errs, c.want)
		}
	}
}

// The real thing, on the registries' own release lists (minutes: make bisect, LOCKCHECK_BISECT=1). Each
// bisect names the release that fixed its entry's bug, and a --good side that is in fact bad is refused.
func TestBisectEndToEnd(t *testing.T) {
	// Sequential: a campaign (make bisect), skipped in make test.
	if os.Getenv("LOCKCHECK_BISECT") == "" {
		t.Skip("minutes of real runs: make bisect (LOCKCHECK_BISECT=1)")
	}
	useWorkerCache(t)
	bin := buildBinary(t)
	type bisectCase struct {
		args []string
		code int
		want string
	}
	cases := []bisectCase{
		{[]string{"--client", "redis-py", "--good", "2.10.6", "--bad", "3.0.0", "--seeds", "1", "redis-py-621-with-blocking-timeout"}, exitUsage,
			"--good 2.10.6 is not good: caught on 1 of 1 seeds"},
	}
	// Every example of bisect --help finds the release the catalog names as the fix.
	for _, args := range helpExamples(t, newBisectCmd()) {
		entry, err := repro.Get(args[len(args)-1])
		if err != nil {
			t.Fatal(err)
		}
		fix, _ := entry.Repro.FixRelease()
		cases = append(cases, bisectCase{args[2:], exitValid, fmt.Sprintf("the fix: %s %s is the first good release", args[3], fix)})
	}
	for _, c := range cases {
		code, out, errs := runBinary(t, bin, append([]string{"bisect", "--results", t.TempDir()}, c.args...)...)
		t.Logf("bisect %v: exit %d\n%s%s", c.args, code, out, errs)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("bisect %v: exit %d, want %d and %q", c.args, code, c.code, c.want)
		}
	}
}

// Every catalog entry's runs pass the run command's own flag checks (a dry run: nothing built or started),
// so a typo in an entry's flags is caught here rather than by make repro.
func TestReproEntriesDryRun(t *testing.T) {
	t.Parallel() // dry runs only: nothing starts
	entries, err := repro.List()
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot()
	root.SetContext(context.Background())
	for _, s := range entries {
		repro.Reseed(s, 1)
		for _, c := range s.Cases {
			if err := dryRun(root, c.Args); err != nil {
				t.Errorf("repro %s %s: %v", s.Name, c.Entry, err)
			}
		}
	}
}

// A release is bad when any seed was caught, good only when every seed was valid, and skipped when a
// seed gave no verdict and none was caught.
func TestJudgeRelease(t *testing.T) {
	t.Parallel() // pure: no run
	out := func(verdicts ...string) *suite.Report {
		r := &suite.Report{}
		for i, v := range verdicts {
			o := suite.Outcome{Verdict: v, FirstNs: int64(i+1) * 1e9}
			o.Seed = int64(i + 1)
			r.Outcomes = append(r.Outcomes, o)
		}
		return r
	}
	for _, c := range []struct {
		verdicts []string
		want     bisect.Verdict
		caught   int
	}{
		{[]string{"valid", "invalid", "unknown"}, bisect.Bad, 1},
		{[]string{"valid", "valid", "valid"}, bisect.Good, 0},
		{[]string{"valid", "unknown", "valid"}, bisect.Skip, 0},
		{[]string{"error", "valid", "valid"}, bisect.Skip, 0},
		{[]string{"valid", "valid"}, bisect.Skip, 0}, // a seed missing
	} {
		r := judgeRelease(out(c.verdicts...), 3, time.Second)
		if r.Verdict != c.want || r.Caught != c.caught {
			t.Errorf("%v: %v caught %d, want %v caught %d", c.verdicts, r.Verdict, r.Caught, c.want, c.caught)
		}
		if c.want == bisect.Skip && !strings.Contains(r.Why, "no verdict") {
			t.Errorf("%v: skipped without saying why: %q", c.verdicts, r.Why)
		}
	}
	if r := judgeRelease(out("invalid", "valid", "invalid"), 3, 0); r.FirstViolation != 3*time.Second {
		t.Errorf("median first violation %v, want 3s (seeds 1 and 3 at 1 s and 3 s)", r.FirstViolation)
	}
}
