package bugreport

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// A report of a run the catalog knows names the entry in its title block; a lease lock's Expected says the
// promise holds within the lease and which side of it this run fell on; a --scripts run says whose scripts
// ran, not "lockcheck's Go emulation".
func TestReportKnownAndLease(t *testing.T) {
	k := &report.Known{Entry: &report.KnownEntry{Name: "kleppmann-pause", Design: true},
		Text:    "known: `kleppmann-pause`, a design limit of every lease lock; mitigation: fencing tokens",
		Confirm: "confirm on the real library with the same command and `--client redisson@VERSION`"}
	st := &report.Story{Kind: report.Overlap, Checker: "mutual-exclusion", Key: "lock-0", Lease: report.PastLease,
		Owners: []report.StoryOwner{{Name: "c1/1"}, {Name: "c2/1"}}, Text: "Two owners held lock-0 at once."}
	in := &Input{Dir: "/r", Results: &report.Results{Valid: checker.Invalid, Lock: "reentrant", Topology: "single",
		Story: st, Known: k}, Meta: history.RunMeta{Lock: "reentrant", Command: []string{"lockcheck", "run"}}}
	var b strings.Builder
	if err := in.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	title := out[:strings.Index(out, "## Affected")]
	for _, want := range []string{k.Text, "--client redisson@VERSION"} {
		if !strings.Contains(title, want) {
			t.Errorf("title block lacks %q:\n%s", want, title)
		}
	}
	exp := out[strings.Index(out, "## Expected"):strings.Index(out, "## Actual")]
	if !strings.Contains(exp, "within the lease") || !strings.Contains(exp, "This run fell past the lease: c2/1 was let in after c1/1's lease had ended") {
		t.Errorf("expected:\n%s", exp)
	}
	st.Late = true // the first owner's grant came back late: said beside the lease it had
	b.Reset()
	_ = in.Write(&b)
	if !strings.Contains(b.String(), "c1/1's lease had ended (c1/1 heard of its grant only after that lease could have ended)") {
		t.Errorf("late:\n%s", b.String())
	}
	st.Late, st.Lease = false, report.WithinLease
	b.Reset()
	_ = in.Write(&b)
	if !strings.Contains(b.String(), "This run fell within the lease") {
		t.Errorf("within:\n%s", b.String())
	}
	// A run records its set as "SET+DIR" with --scripts: the report names the set, not the directory.
	in.Meta.Options.Scripts, in.Meta.ScriptSet = "/home/u/mine", "redisson+/home/u/mine"
	if s := in.subject() + " / " + in.library(); strings.Contains(s, "Go emulation") || !strings.Contains(s, "mine") ||
		strings.Contains(s, "/home/u") || !strings.Contains(s, "in place of redisson's own") {
		t.Errorf("--scripts: %s", s)
	}
}

// A schedule run's report says the schedule's steps ran, not the random workload its flags describe ("2
// clients, for 30s, each in a loop") nor a fault plan ("one every 5s, each lasting 3s").
func TestScheduleRunWorkload(t *testing.T) {
	in := &Input{Results: &report.Results{Nemesis: []string{"client-pause"}}, Meta: history.RunMeta{Checks: history.Checks{Family: "mutex"},
		Options: history.Options{Clients: 2, Hold: "10ms-200ms", Schedule: "/home/u/reentry-lease.yaml",
			ScheduleSHA256: "34f145cc2796abcdef", ScheduleAbout: "c1 re-enters with a 500 ms lease"}}}
	w := in.Workload()
	for _, bad := range []string{"2 clients", "in a loop", "10ms-200ms", "one every"} {
		if strings.Contains(w, bad) {
			t.Errorf("a schedule run's workload says %q: %s", bad, w)
		}
	}
	if !strings.Contains(w, "reentry-lease.yaml") || !strings.Contains(w, "34f145cc2796") || !strings.Contains(w, "500 ms lease") {
		t.Errorf("workload: %s", w)
	}
}

// The report says results.json's one description of what ran (report.WhatRan, which the page shows too),
// and makes the same from the meta record for results written before it.
func TestWorkloadIsWhatRan(t *testing.T) {
	meta := history.RunMeta{Checks: history.Checks{Family: "mutex"}, Options: history.Options{Clients: 1, Hold: "10ms-20ms", Watchdog: history.Duration(time.Second)}}
	in := &Input{Results: &report.Results{}, Meta: meta}
	want := report.WhatRan(meta, nil)
	if got := in.Workload(); got != want || !strings.HasPrefix(got, "1 client, ") || !strings.Contains(got, "renews every 333ms") {
		t.Errorf("from the meta record: %q (WhatRan %q)", got, want)
	}
	in.Results.Ran = "what results.json says"
	if got := in.Workload(); got != in.Results.Ran {
		t.Errorf("results.json's description not used: %q", got)
	}
}
