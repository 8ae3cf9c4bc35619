package known

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/report"
)

// runOf is the meta record the buggy side of a rule writes: its lock, and its worker (--client lib@v) or
// the script set lockcheck's Go clients run.
func runOf(t *testing.T, r rule) history.RunMeta {
	lock := r.lock
	if lock == "" {
		lock = "reentrant"
	}
	run := history.RunMeta{Lock: lock}
	if r.client != "" {
		lib, v, _ := strings.Cut(r.client, "@")
		run.Client = &history.Client{Name: lib, Library: lib, Version: v}
		return run
	}
	k, err := kinds.Lookup(lock)
	if err != nil {
		t.Fatal(err)
	}
	run.ScriptSet = k.Scripts
	return run
}

// Every catalog entry is matched by the finding its buggy side's runs show (its checker, faults, lock
// family, library and version, and its match: block), and by no other entry ahead of it: a new entry that
// shadows an older one, or one its own runs cannot meet, fails here. `lockcheck repro` checks the same on
// real runs: a caught run of the buggy side must be known as its entry.
func TestEveryEntryIsMatchable(t *testing.T) {
	rs, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 20 {
		t.Fatalf("%d catalog rules", len(rs))
	}
	for _, r := range rs {
		for _, c := range r.checkers {
			s := Signature{Kind: report.KindOf(c), Checker: c, Family: r.families[0], Faults: append(slices.Clone(r.faults), r.anyFault[:min(1, len(r.anyFault))]...), Lease: r.lease,
				Shortened: r.shortened != nil && *r.shortened, Stopped: r.stopped != nil && *r.stopped,
				Outlived: r.outlived != nil && *r.outlived, GaveUp: r.gaveUp != nil && *r.gaveUp, Late: r.late != nil && *r.late}
			if r.kind != "" {
				s.Kind = r.kind
			}
			want := r.entry.Name
			if r.as != "" {
				want = r.as
			}
			for _, f := range r.families { // on every family it names
				s.Family = f
				if e, ok := Match(s, runOf(t, r)); !ok || e.Name != want {
					t.Errorf("%s's buggy side (%s): matched %q (%v), want %s", r.entry.Name, s, e.Name, ok, want)
				}
			}
		}
	}
}

// The finding the issue started from: RLock frozen past its 1 s watchdog lease by a client pause is the
// catalog's kleppmann-pause, on lockcheck's emulation or on Redisson itself; the same overlap within the
// lease is new; a Redisson release that fixed a bug is not that bug.
func TestMatch(t *testing.T) {
	pause := Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"client-pause"},
		Lease: report.PastLease}
	emulation := history.RunMeta{Lock: "reentrant", ScriptSet: "redisson"}
	worker := history.RunMeta{Lock: "reentrant", Client: &history.Client{Name: "redisson", Library: "redisson", Version: "3.52.0"}}
	for _, run := range []history.RunMeta{emulation, worker} {
		e, ok := Match(pause, run)
		if !ok || e.Name != "kleppmann-pause" || !e.Design {
			t.Fatalf("pause past the lease: %+v %v", e, ok)
		}
		if got := Text(e); got != "known: `kleppmann-pause`, a design limit of every lease lock; mitigation: fencing tokens" {
			t.Errorf("text: %s", got)
		}
	}
	naive := Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"failover"}}
	if e, ok := Match(naive, history.RunMeta{Lock: "naive"}); !ok || e.Name != "design-failover-single-node" ||
		Text(e) != "known: `design-failover-single-node`, a design limit of every lock that trusts one primary's reply; mitigation: WAIT after the grant" {
		t.Errorf("the naive lock under a failover: %q %v", Text(e), ok)
	}
	// a client-stall freezes the holder whole, its watchdog too: the same design limit (explore found it on
	// the fair lock); a fault that freezes nobody is not
	stall := pause
	stall.Faults = []string{"client-stall"}
	if e, ok := Match(stall, emulation); !ok || e.Name != "kleppmann-pause" {
		t.Errorf("a stall past the lease: %+v %v", e, ok)
	}
	stall.Faults = []string{"latency"}
	if e, ok := Match(stall, emulation); ok && e.Name == "kleppmann-pause" {
		t.Errorf("an overlap past the lease under latency alone matched kleppmann-pause")
	}
	early := pause
	early.Lease = report.WithinLease
	if e, ok := Match(early, emulation); ok {
		t.Errorf("an overlap within the lease matched %s", e.Name)
	}
	lost := Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"partition"}}
	old := history.RunMeta{Lock: "reentrant", Client: &history.Client{Name: "redisson", Library: "redisson", Version: "3.43.0"}}
	if e, ok := Match(lost, old); !ok || e.Name != "redisson-3194-watchdog-stops-after-error" || e.Fixed != "3.44.0" {
		t.Errorf("3.43.0 under a partition: %+v %v", e, ok)
	}
	// redsync v4.0.3's Extend answering ok on a lost lock is porcupine's finding, beside the pause's overlap
	// the story leads with: the library's bug, not only the design limit (a real repro run found this).
	extend := pause
	extend.Also = []string{"porcupine", "told-of-loss"}
	redsync := history.RunMeta{Lock: "reentrant", Client: &history.Client{Name: "redsync", Library: "redsync", Version: "v4.0.3"}}
	if e, ok := Match(extend, redsync); !ok || e.Name != "redsync-extend-lost-lock" {
		t.Errorf("redsync v4.0.3's extend: %+v %v", e, ok)
	}
	redsync.Client.Version = "v4.0.4"
	if e, ok := Match(extend, redsync); !ok || e.Name != "kleppmann-pause" {
		t.Errorf("redsync v4.0.4 (fixed): %+v %v, want the pause's design limit", e, ok)
	}
	// Redisson #5256's vanished lock, once another client took it: an overlap under the lagging failover,
	// porcupine invalid beside it, lost-lock valid (a real run of the entry's buggy side).
	lag := Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"lagging-failover"},
		Also: []string{"porcupine"}}
	if e, ok := Match(lag, emulation); !ok || e.Name != "redisson-5256-lagging-failover" {
		t.Errorf("an overlap under the lagging failover: %+v %v", e, ok)
	}
	// A re-entry that shortened a watchdog's hold under drop-reply is the re-entry's design limit, not
	// Redisson #2515 (whose hold expires unrenewed after a failed unlock: past its lease, not shortened):
	// explore found this shape on the fair lock and it was named #2515.
	reentry := Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"drop-reply"},
		Lease: report.PastLease, Shortened: true}
	if e, ok := Match(reentry, emulation); !ok || e.Name != "design-reentry-lease" {
		t.Errorf("a shortened hold under drop-reply: %+v %v, want design-reentry-lease", e, ok)
	}
	reentry.Shortened, reentry.Lease = false, report.WithinLease
	if e, ok := Match(reentry, history.RunMeta{Lock: "reentrant", Client: &history.Client{Name: "redisson", Library: "redisson", Version: "3.12.0"}}); ok && e.Name == "redisson-2515-renewal-after-failed-unlock" {
		t.Errorf("an overlap within the lease under drop-reply matched %s", e.Name)
	}
	// A watchdog hold past its lease under drop-reply: on Redisson 3.12.0 it is #2515 (a failed unlock left
	// its renewal behind); on lockcheck's emulation, which plays the library as it is now, not that fixed
	// bug but the starved watchdog's design limit (explore's unbroken fair lock was named #2515).
	starved := Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"drop-reply"},
		Lease: report.PastLease}
	if e, ok := Match(starved, emulation); !ok || e.Name != "design-slow-link-watchdog" {
		t.Errorf("the emulation's starved watchdog under drop-reply: %+v %v", e, ok)
	}
	// A watchdog that renewed no more after a renewal got no answer is no slow link's doing: explore's
	// watchdog-gives-up twin (a lock spec) was named the starved watchdog's design limit.
	gaveUp := starved
	gaveUp.GaveUp = true
	if e, ok := Match(gaveUp, history.RunMeta{Lock: "setnx-watchdog-gives-up"}); ok && e.Name == "design-slow-link-watchdog" {
		t.Errorf("a watchdog that gave up under drop-reply matched %s", e.Name)
	}
	v3120 := history.RunMeta{Lock: "reentrant", Client: &history.Client{Name: "redisson", Library: "redisson", Version: "3.12.0"}}
	if e, ok := Match(starved, v3120); !ok || e.Name != "redisson-2515-renewal-after-failed-unlock" {
		t.Errorf("Redisson 3.12.0's hold past its lease under drop-reply: %+v %v", e, ok)
	}
	fixed := old
	fixed.Client = &history.Client{Name: "redisson", Library: "redisson", Version: "3.44.0"}
	if e, ok := Match(lost, fixed); ok {
		t.Errorf("3.44.0 matched %s, fixed in 3.44.0", e.Name)
	}
}

// Of makes results.json's known line: the entry or "new", how to confirm an emulation's finding on the
// library, and whose scripts ran where the user replaced them.
func TestOf(t *testing.T) {
	o := checker.Overlap{Key: "lock-0", Holder: "c1/1", Intruder: "c2/1", HeldFrom: 1, HeldTo: 3e9, Entered: 2e9, IntruderOut: 4e9}
	res := &report.Results{Valid: checker.Invalid, Story: &report.Story{Kind: report.Overlap, Checker: "mutual-exclusion",
		Faults: []report.StoryFault{{Fault: "client-pause"}}, Lease: report.PastLease}, Checkers: []checker.Result{
		{Checker: "mutual-exclusion", Valid: checker.Invalid, At: o.Entered, Details: map[string]any{"first": o}}}}
	h := &history.History{Run: &history.RunMeta{Lock: "reentrant", ScriptSet: "redisson", Checks: history.Checks{Family: "mutex"}}}
	k := Of(h, res)
	if k == nil || k.Entry == nil || k.Entry.Name != "kleppmann-pause" || !strings.Contains(k.Confirm, "--client redisson@") {
		t.Fatalf("%+v", k)
	}
	h.Run.Options.Scripts = "/home/u/my-scripts"
	k = Of(h, res)
	if k.Confirm != "" || !strings.Contains(k.Scripts, "my-scripts") || !strings.Contains(k.Scripts, "not redisson's own") {
		t.Errorf("--scripts: confirm %q, scripts %q", k.Confirm, k.Scripts)
	}
	res.Story.Lease = report.WithinLease
	if k := Of(h, res); k.Entry != nil || !strings.HasPrefix(k.Text, "new: nothing in lockcheck's catalog matches") {
		t.Errorf("within the lease: %+v", k)
	}
	// The breaking transition (package coverage) is the signature's shape.
	res.Breaking = &coverage.Transition{Family: "mutex", Before: "held-once", Op: "acquire", Outcome: "granted", Lease: "none"}
	if k := Of(h, res); !strings.Contains(k.Signature, ", at "+res.Breaking.String()) {
		t.Errorf("signature without the breaking transition: %s", k.Signature)
	}
	res.Valid = checker.Valid
	if k := Of(h, res); k != nil {
		t.Errorf("a valid run: %+v", k)
	}
}

// What explore found on Redisson's unbroken read-write lock is known: a reader whose watchdog a re-entry's
// unlock stopped (Redisson's, on the worker and on the emulation of its scripts, not on a user's spec or a
// --scripts twin), a reader past its lease behind a node pause, a frozen reader, a write re-entry's unlock
// that shortened the lock; past the lease under delay-pexpire with none of these, it stays new.
func TestMatchRWLock(t *testing.T) {
	emulation := history.RunMeta{Lock: "rwlock", ScriptSet: "redisson"}
	worker := history.RunMeta{Lock: "rwlock", Client: &history.Client{Name: "redisson", Library: "redisson", Version: "4.7.0"}}
	overlap := func(faults []string, lease report.LeaseSide) Signature {
		return Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "rwlock", Faults: faults, Lease: lease}
	}
	stopped := overlap([]string{"delay-pexpire"}, report.PastLease)
	stopped.Stopped = true
	shortened := overlap(nil, report.PastLease)
	shortened.Shortened = true
	outlived := overlap([]string{"drop-reply"}, report.PastLease) // a refused acquire left a re-entry's 300 ms as the hold's
	outlived.Outlived = true
	outlatency := overlap([]string{"latency"}, report.PastLease)
	outlatency.Outlived = true
	late := func(faults ...string) Signature { // the first owner's grant came back after its own lease could end
		s := overlap(faults, report.PastLease)
		s.Outlived, s.Late = true, true
		return s
	}
	for _, c := range []struct {
		s    Signature
		runs []history.RunMeta
		want string
	}{
		{stopped, []history.RunMeta{emulation, worker}, "redisson-rw-reentry-stops-watchdog"},
		{stopped, []history.RunMeta{{Lock: "rwlock", Spec: "rwlock.yaml"}, {Lock: "rwlock", ScriptSet: "redisson", Options: history.Options{Scripts: "/twins/x"}}}, ""},
		{overlap([]string{"pause"}, report.PastLease), []history.RunMeta{emulation, worker, {Lock: "rwlock", Spec: "rwlock.yaml"}}, "design-server-pause"},
		{overlap([]string{"delay-pexpire", "pause"}, report.PastLease), []history.RunMeta{emulation}, "design-server-pause"},
		{overlap([]string{"pause"}, report.WithinLease), []history.RunMeta{emulation}, ""},
		{overlap([]string{"client-pause"}, report.PastLease), []history.RunMeta{emulation, {Lock: "rwlock", Spec: "rwlock.yaml"}}, "kleppmann-pause"},
		{shortened, []history.RunMeta{emulation, worker}, "design-reentry-lease"},
		{overlap([]string{"delay-pexpire"}, report.PastLease), []history.RunMeta{emulation, worker}, ""},
		{outlived, []history.RunMeta{emulation, worker, {Lock: "rwlock", Spec: "rwlock.yaml"}}, "design-hold-past-lease"},
		{overlap([]string{"latency"}, report.PastLease), []history.RunMeta{emulation, worker}, "design-slow-link-watchdog"},
		{outlatency, []history.RunMeta{emulation}, "design-hold-past-lease"}, // a fixed lease: no renewal came late
		{late("latency"), []history.RunMeta{emulation, worker}, "design-late-grant"},
		{late("client-pause"), []history.RunMeta{emulation}, "design-late-grant"}, // not kleppmann-pause: no hold was frozen
		{late(), []history.RunMeta{emulation, {Lock: "rwlock", Spec: "rwlock.yaml"}}, "design-late-grant"},
	} {
		for _, run := range c.runs {
			e, ok := Match(c.s, run)
			if ok != (c.want != "") || e.Name != c.want {
				t.Errorf("%s on %+v: matched %q (%v), want %q", c.s, run, e.Name, ok, c.want)
			}
		}
	}
	// The node pause on a mutex is the same limit.
	if e, ok := Match(Signature{Kind: report.Overlap, Checker: "mutual-exclusion", Family: "mutex", Faults: []string{"pause"},
		Lease: report.PastLease}, history.RunMeta{Lock: "reentrant", ScriptSet: "redisson"}); !ok || e.Name != "design-server-pause" {
		t.Errorf("a node pause past the lease on a mutex: %+v %v", e, ok)
	}
}

// The unbroken fair lock's fifo overtaking (its queue's deadlines dated from the first waiter) is the design
// limit on Redisson's scripts, the emulation's or the worker's; the fair-fixed-slot twin's (--scripts) is not.
func TestMatchFairFifo(t *testing.T) {
	fifo := Signature{Kind: report.KindOf("fifo"), Checker: "fifo", Family: "mutex"}
	for _, run := range []history.RunMeta{{Lock: "fair", ScriptSet: "redisson"},
		{Lock: "fair", Client: &history.Client{Name: "redisson", Library: "redisson", Version: "4.7.0"}}} {
		if e, ok := Match(fifo, run); !ok || e.Name != "design-fair-queue-anchored" {
			t.Errorf("fifo on %+v: %+v %v", run, e, ok)
		}
	}
	twin := history.RunMeta{Lock: "fair", ScriptSet: "redisson", Options: history.Options{Scripts: "/twins/fair-fixed-slot"}}
	if e, ok := Match(fifo, twin); ok {
		t.Errorf("the fair-fixed-slot twin's fifo matched %s", e.Name)
	}
}
