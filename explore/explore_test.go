package explore

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/workloads/schedule"
)

var rwCaps = Caps{Lock: "rwlock", Family: "rwlock", Reentrant: true, Watchdog: true,
	Faults: []Fault{{Name: "client-pause", Client: true}, {Name: "kill"}}}

// semCaps are the expirable semaphore's on Sentinel, as pes-release-twice's flags give them.
var semCaps = Caps{Lock: "expirable-semaphore", Family: "expirable-semaphore", Permits: 2, Timeout: time.Second,
	Faults: []Fault{{Name: "client-pause", Client: true}, {Name: "drop-reply", Client: true}, {Name: "latency", Client: true},
		{Name: "pause"}, {Name: "failover"}}}

// TestGeneratedAndMutatedSchedulesAreValid: every genome the generator and the mutators make reads back
// from its own text and passes the lock's check, and every mutator gets applied somewhere.
func TestGeneratedAndMutatedSchedulesAreValid(t *testing.T) {
	for _, c := range []Caps{rwCaps, {Lock: "naive", Family: "mutex"}, {Lock: "reentrant", Family: "mutex", Reentrant: true, Watchdog: true},
		semCaps, {Lock: "semaphore", Family: "semaphore", Permits: 2, Faults: semCaps.Faults}} {
		rng := rand.New(rand.NewPCG(1, 2))
		applied := map[string]bool{}
		var corpus []*Genome
		for i := range 400 {
			g := Generate(rng, c)
			if err := g.Check(c); err != nil {
				t.Fatalf("%s: generated #%d: %v\n%s", c.Lock, i, err, g.Schedule.Marshal())
			}
			corpus = append(corpus, g)
			m := Mutate(rng, c, corpus[rng.IntN(len(corpus))], corpus[rng.IntN(len(corpus))])
			if m == nil {
				continue
			}
			if err := m.Check(c); err != nil {
				t.Fatalf("%s: mutated #%d (%s): %v", c.Lock, i, m.Origin, err)
			}
			for _, n := range splitNames(m.Origin) {
				applied[n] = true
			}
			corpus = append(corpus, m)
		}
		for _, mu := range Mutators {
			usable := !(mu.Name == "op" && c.Family != "rwlock") && !(mu.Name == "reenter" && !c.Reentrant && !c.semaphore()) &&
				!(mu.Name == "watchdog" && !c.Watchdog) && !((mu.Name == "fault-on-event" || mu.Name == "move-fault") && len(c.Faults) == 0) &&
				!(mu.Name == "permits" && !c.semaphore()) && !(mu.Name == "timeout" && c.Timeout == time.Second)
			if usable && !applied[mu.Name] {
				t.Errorf("%s: mutator %s never applied", c.Lock, mu.Name)
			}
		}
	}
}

func splitNames(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r == '+' || r == ' ' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			if r == ' ' {
				break
			}
			continue
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// zsetTwin plays a schedule on a model of examples/locks/rwlock-zset-broken.yaml's flaw, without a process:
// a reader whose lease is shorter than an earlier reader's (who has not released) drops the earlier's hold,
// and a writer that asks after that is let in beside it. Its coverage is each acquire's op, whether the
// lock was free, and its lease against the longest lease held.
func zsetTwin(_ context.Context, t Trial) Outcome {
	out := Outcome{Verdict: "valid", Transitions: map[string]int{}}
	held := map[string]time.Duration{} // reader -> lease
	shrunk := false
	// the steps in the order their chains of after and delay start them (waits and an actor's own order
	// left out: a model, not a player)
	at := map[string]time.Duration{}
	steps := slices.Clone(t.Genome.Schedule.Steps)
	for _, st := range steps {
		at[st.Name] = st.At
		if st.After != "" {
			at[st.Name] = at[st.After] + st.Delay
		}
	}
	slices.SortStableFunc(steps, func(a, b schedule.Step) int { return cmp.Compare(at[a.Name], at[b.Name]) })
	for _, st := range steps {
		who := st.Actor()
		switch {
		case st.Acquire == schedule.Read:
			longest := time.Duration(0)
			for _, l := range held {
				longest = max(longest, l)
			}
			rel := "free"
			if len(held) > 0 {
				rel = "longer"
				if *st.Lease < longest {
					rel, shrunk = "shorter", true
				}
			}
			out.Transitions["read "+rel]++
			held[who] = *st.Lease
		case st.Acquire == schedule.Write:
			state := "free"
			if len(held) > 0 {
				state = "readers"
				if shrunk {
					out.Verdict, out.Signature = "invalid", "mutual-exclusion (overlap) read shorter"
				}
			}
			out.Transitions["write "+state]++
		case st.Release:
			delete(held, who)
			if len(held) == 0 {
				shrunk = false
			}
			out.Transitions["release"]++
		}
	}
	return out
}

// TestExploreFindsTheZsetTwinsShape: a seeded search against the model of the broken twin finds it within
// a bounded number of runs, files every run of it as one finding, and does so the same way twice.
func TestExploreFindsTheZsetTwinsShape(t *testing.T) {
	found := func() (int, int, int) {
		e := &Explorer{Caps: rwCaps, Seed: 7, Run: zsetTwin, MaxRuns: 300}
		e.Search(context.Background())
		if len(e.Findings) != 1 {
			t.Fatalf("%d findings, want 1: %+v", len(e.Findings), e.Findings)
		}
		f := e.Findings[0]
		if f.Genome().Check(rwCaps) != nil {
			t.Errorf("finding %+v: want a schedule the lock can play", f)
		}
		return f.FirstRun, len(e.Corpus), len(e.Coverage)
	}
	first, corpus, cov := found()
	if first > 200 {
		t.Errorf("found at run %d, want within 200", first)
	}
	if corpus < 3 || cov < 4 {
		t.Errorf("corpus %d, coverage %d: the search kept too little", corpus, cov)
	}
	if a, b, c := found(); a != first || b != corpus || c != cov {
		t.Errorf("the same seed gave run %d, corpus %d, coverage %d, then %d, %d, %d", first, corpus, cov, a, b, c)
	}
	t.Logf("found at run %d; corpus %d, coverage %d", first, corpus, cov)
}

// TestMaxFindingsStops: the search ends at the bound and says why.
func TestMaxFindingsStops(t *testing.T) {
	e := &Explorer{Caps: rwCaps, Seed: 3, Run: zsetTwin, MaxFindings: 1, MaxRuns: 1000}
	e.Search(context.Background())
	if e.Stopped != "max-findings" || len(e.Findings) != 1 {
		t.Fatalf("stopped %q with %d findings", e.Stopped, len(e.Findings))
	}
	if e.Status().Runs >= 1000 {
		t.Errorf("ran to the run bound")
	}
	_ = strconv.Itoa
}

// TestMaxFindingsCountsNewOnes: a finding the catalog names (a base lock's design limit) is kept but does
// not end the search; the first new one does.
func TestMaxFindingsCountsNewOnes(t *testing.T) {
	known := func(ctx context.Context, t Trial) Outcome {
		if t.N <= 3 { // the first runs all show a known limit
			return Outcome{Verdict: "invalid", Signature: "design-limit-shape", Known: "design-limit",
				Transitions: map[string]int{"known": 1}}
		}
		return zsetTwin(ctx, t)
	}
	e := &Explorer{Caps: rwCaps, Seed: 3, Run: known, MaxFindings: 1, MaxRuns: 1000}
	e.Search(context.Background())
	if e.Stopped != "max-findings" || len(e.Findings) != 2 || e.Findings[0].Known != "design-limit" || e.Findings[1].Known != "" {
		t.Fatalf("stopped %q with findings %+v: want the known one kept and the search ended at the new one", e.Stopped, e.Findings)
	}
}

// TestMaxFindingsWaitsForAFailureAgain: a new finding that its genome never shows again (the machine lined
// it up once: rw-read-shorter-lease's explore stopped at such a one, 0 of 5 once settled) is kept, but the
// search goes on to one that fails again on the next seed, runs it again at once, and stops there.
func TestMaxFindingsWaitsForAFailureAgain(t *testing.T) {
	var again []int
	fluke := func(ctx context.Context, tr Trial) Outcome {
		if strings.HasSuffix(tr.Genome.Origin, ", again") {
			again = append(again, tr.N)
		}
		if tr.N == 1 {
			return Outcome{Verdict: "invalid", Signature: "once", Transitions: map[string]int{"once": 1}}
		}
		return zsetTwin(ctx, tr)
	}
	e := &Explorer{Caps: rwCaps, Seed: 3, Run: fluke, MaxFindings: 1, MaxRuns: 1000}
	e.Search(context.Background())
	if e.Stopped != "max-findings" || len(e.Findings) != 2 {
		t.Fatalf("stopped %q with %d findings: want the fluke kept and the search ended at the twin's", e.Stopped, len(e.Findings))
	}
	fl, tw := e.Findings[0], e.Findings[1]
	if fl.Signature != "once" || fl.Again() || !tw.Again() {
		t.Fatalf("the fluke %s again %v; the twin's %s again %v", fl.Signature, fl.Again(), tw.Signature, tw.Again())
	}
	// the fluke's genome ran twice more right after it; the twin's failed again within its rechecks, and
	// the search stopped there
	if len(again) < 2 || again[0] != 2 || again[1] != 3 || tw.Runs[1]-tw.FirstRun > Recheck+1 || e.Status().Runs != tw.Runs[1] {
		t.Errorf("rechecks at runs %v; the twin's runs %v; %d runs", again, tw.Runs, e.Status().Runs)
	}
}

// TestHoldFitsWithItsClientsPause: a holder whose release follows its grant (counted from the grant) and
// whose client may be paused in between holds for the pause too. Explore generated this schedule and found
// "new" on the unbroken rwlock.yaml: c3's 3 s read frozen 2 s by a client-pause that a node pause had pushed
// into its hold, its release late past its lease.
func TestHoldFitsWithItsClientsPause(t *testing.T) {
	text := `lock: rwlock
steps:
  - {name: s1, client: c1, acquire: read, lease: 1s, wait: 0s}
  - {name: s2, after: s1, delay: 200ms, client: c1, release: true}
  - {name: s3, after: s1, fault: pause, for: 1s}
  - {name: s7, after: s3, delay: 20ms, client: c3, acquire: read, lease: 3s, wait: 4s}
  - {name: s8, after: s7, delay: 1s, client: c3, release: true}
  - {name: s13, after: s2, fault: client-pause, targets: [c3], for: 2s}
`
	s, err := schedule.Parse([]byte(text), "test")
	if err != nil {
		t.Fatal(err)
	}
	err = timesOf(s, 0).holdsFit(s)
	if err == nil || !strings.Contains(err.Error(), "c3 may hold for") {
		t.Fatalf("holdsFit: %v, want c3's hold with its 2 s pause refused on a 3 s lease", err)
	}
	s.Steps[5].For = 200 * time.Millisecond // a short pause fits
	if err := timesOf(s, 0).holdsFit(s); err != nil {
		t.Fatal(err)
	}
}

// doubleRelease plays a schedule on a model of examples/twins/pes-release-twice's flaw, without a process:
// a permit's release that goes out while a drop-reply aimed at its client is on is sent again, and the twin
// counts the resend as a second permit given back; a holder beyond the permits is a violation. Its coverage
// is each acquire's state (permits all, some, none) and outcome, and each release's (under a lost reply or
// not).
func doubleRelease(ctx context.Context, t Trial) Outcome { return releaseModel(false)(ctx, t) }

// byOwnerRelease models examples/twins/sem-release-by-owner's flaw: the resent release frees its holder's
// next permit, so it counts twice only while the holder has a second one.
func byOwnerRelease(ctx context.Context, t Trial) Outcome { return releaseModel(true)(ctx, t) }

func releaseModel(byOwner bool) Runner {
	return func(_ context.Context, t Trial) Outcome {
		out := Outcome{Verdict: "valid", Transitions: map[string]int{}}
		g := t.Genome
		permits := g.permits(semCaps)
		at := map[string]time.Duration{}
		steps := slices.Clone(g.Schedule.Steps)
		for _, st := range steps {
			at[st.Name] = st.At
			if st.After != "" {
				at[st.Name] = at[st.After] + st.Delay
			}
		}
		slices.SortStableFunc(steps, func(a, b schedule.Step) int { return cmp.Compare(at[a.Name], at[b.Name]) })
		lost := func(st schedule.Step) bool { // a drop-reply on the client is on as the release goes out
			for _, f := range steps {
				if f.Fault == "drop-reply" && (len(f.Targets) == 0 || slices.Contains(f.Targets, st.Client)) &&
					at[f.Name] <= at[st.Name] && at[st.Name] < at[f.Name]+f.For {
					return true
				}
			}
			return false
		}
		available, holders := permits, int64(0)
		held := map[string]int{}   // actor -> permits granted whose section is still open
		inLock := map[string]int{} // actor -> permits the semaphore still counts as the actor's
		for _, st := range steps {
			who := st.Actor()
			switch {
			case st.Acquire == schedule.Permit:
				state := "some"
				switch available {
				case permits:
					state = "all"
				case 0:
					state = "none"
				}
				if available <= 0 {
					out.Transitions["acquire "+state+" refused"]++
					continue
				}
				available, holders, held[who], inLock[who] = available-1, holders+1, held[who]+1, inLock[who]+1
				out.Transitions["acquire "+state+" granted"]++
				if holders > permits {
					out.Verdict, out.Signature = "invalid", "holders > permits"
				}
			case st.Release && held[who] > 0:
				holders, held[who] = holders-1, held[who]-1
				if inLock[who] > 0 {
					available, inLock[who] = available+1, inLock[who]-1
				}
				how := "release"
				if lost(st) && (!byOwner || inLock[who] > 0) { // the resend frees one more
					available, how = available+1, "release resent"
					if byOwner {
						inLock[who]--
					}
				}
				out.Transitions[how]++
			}
		}
		return out
	}
}

// TestExploreFindsTheDoubleCountedRelease: a seeded search of the expirable semaphore on Sentinel against
// the model of a release counted twice after its lost reply finds it within a bounded number of runs, the
// same way twice: explore plays permits, and lines a drop-reply up with a holder's release.
func TestExploreFindsTheDoubleCountedRelease(t *testing.T) {
	found := func() (int, string) {
		e := &Explorer{Caps: semCaps, Seed: 1, Run: doubleRelease, MaxRuns: 300, MaxFindings: 1}
		e.Search(context.Background())
		if len(e.Findings) != 1 {
			t.Fatalf("%d findings in %d runs, want the double count", len(e.Findings), e.Status().Runs)
		}
		f := e.Findings[0]
		if err := f.Genome().Check(semCaps); err != nil {
			t.Errorf("finding's schedule: %v", err)
		}
		return f.FirstRun, string(f.Genome().Schedule.Marshal())
	}
	first, s := found()
	if first > 100 {
		t.Errorf("found at run %d, want within 100", first)
	}
	if again, s2 := found(); again != first || s2 != s {
		t.Errorf("the same seed found it at run %d, then %d", first, again)
	}
	if !strings.Contains(s, "acquire: permit") || !strings.Contains(s, "drop-reply") {
		t.Errorf("the finding's schedule:\n%s", s)
	}
	t.Logf("found at run %d:\n%s", first, s)
}

// TestExploreFindsTheReleaseByOwner: a release that frees by holder counts twice only when its holder has
// a second permit; explore gives a semaphore holder a second permit (a hold of its own, its lease fitting
// its work) and finds it, where before it refused such a schedule and never could.
func TestExploreFindsTheReleaseByOwner(t *testing.T) {
	for seed := range int64(3) {
		e := &Explorer{Caps: semCaps, Seed: seed + 1, Run: byOwnerRelease, MaxRuns: 100, MaxFindings: 1}
		e.Search(context.Background())
		if len(e.Findings) != 1 {
			t.Fatalf("seed %d: %d findings in %d runs, want the release by owner", seed+1, len(e.Findings), e.Status().Runs)
		}
		t.Logf("seed %d: found at run %d", seed+1, e.Findings[0].FirstRun)
	}
	// a second permit's own lease must fit its hold, up to the actor's next release
	s, err := schedule.Parse([]byte(`lock: expirable-semaphore
steps:
  - {name: a, client: c1, acquire: permit, lease: 10s}
  - {name: b, after: a, client: c1, acquire: permit, lease: 300ms}
  - {name: c, after: b, delay: 2s, client: c1, release: true}
  - {name: d, after: c, client: c1, release: true}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := timesOf(s, 0).holdsFit(s); err == nil || !strings.Contains(err.Error(), "300ms lease") {
		t.Fatalf("a second permit held 2 s on a 300 ms lease: %v", err)
	}
}

// TestEveryLockGetsASeedOfEachShapeItFits: the search starts from one genome of each shape the lock can
// play, each passing the lock's check; a shape refused every time (its holds not fitting its leases) would
// silently never run.
func TestEveryLockGetsASeedOfEachShapeItFits(t *testing.T) {
	for _, c := range []Caps{rwCaps, {Lock: "fair", Family: "mutex", Reentrant: true, Watchdog: true},
		{Lock: "reentrant", Family: "mutex", Reentrant: true, Watchdog: true, Timeout: time.Second, Faults: semCaps.Faults},
		{Lock: "fenced", Family: "mutex"}, semCaps, {Lock: "semaphore", Family: "semaphore", Permits: 2, Faults: semCaps.Faults}} {
		for seed := range uint64(20) {
			got := map[string]bool{}
			for _, g := range Seeds(rand.New(rand.NewPCG(seed, 7)), c) {
				got[strings.TrimPrefix(g.Origin, "shape ")] = true
			}
			for _, sh := range fitting(c) {
				if !got[sh.Name] {
					t.Fatalf("%s, seed %d: no seed genome of shape %s", c.Lock, seed, sh.Name)
				}
			}
		}
	}
	// queue-outlives-slot on a lock with a watchdog: the holder's lease is the watchdog's, renewed to a
	// short TTL, and the late client comes after a queue slot of 5 s past that TTL has run out.
	g := Seeds(rand.New(rand.NewPCG(1, 7)), Caps{Lock: "fair", Family: "mutex", Watchdog: true})
	q := g[len(g)-1]
	if q.Origin != "shape queue-outlives-slot" || q.Setting("watchdog") != "1500ms" || *q.Schedule.Steps[0].Lease != 0 {
		t.Fatalf("queue-outlives-slot: %s, watchdog %q\n%s", q.Origin, q.Setting("watchdog"), q.Schedule.Marshal())
	}
}

// TestWriteReentryOutlivesItsShortLease: rw-write-reentry-lease (a write re-entry whose lease replaces the
// lock's) went unfound on one seed in 10 minutes, twice: short-joins-long lets its joiner go within the
// joiner's lease, and a write re-entry's unlock sets the lock's TTL afresh. The shape write-reenters-shorter
// keeps the re-entry past its short lease while another client would outwait it.
func TestWriteReentryOutlivesItsShortLease(t *testing.T) {
	for seed := range uint64(20) {
		var g *Genome
		for _, s := range Seeds(rand.New(rand.NewPCG(seed, 7)), rwCaps) {
			if s.Origin == "shape write-reenters-shorter" {
				g = s
			}
		}
		if g == nil {
			t.Fatalf("seed %d: no write-reenters-shorter genome", seed)
		}
		st := g.Schedule.Steps
		hold, in, other, inRel := st[0], st[1], st[2], st[3]
		if hold.Acquire != schedule.Write || in.Acquire != schedule.Write || in.Client != hold.Client || *in.Lease >= *hold.Lease {
			t.Fatalf("seed %d: not a write re-entry with a shorter lease\n%s", seed, g.Schedule.Marshal())
		}
		if other.Client == hold.Client || other.After != in.Name || *other.Wait <= *in.Lease {
			t.Fatalf("seed %d: no other client outwaiting the re-entry's lease\n%s", seed, g.Schedule.Marshal())
		}
		if !inRel.Release || inRel.After != in.Name || inRel.Delay <= *in.Lease {
			t.Fatalf("seed %d: the re-entry is let go within its lease\n%s", seed, g.Schedule.Marshal())
		}
	}
}

// TestOneLeaseStepsCarryNone: a library with one lease for every lock (Spring's RedisLockRegistry) refuses
// an acquire with a lease of its own, so every run explore made of it refused every acquire and reached
// nothing (30 minutes, 238 runs, no transition). Its trials carry no lease, and the lease shapes are left out.
func TestOneLeaseStepsCarryNone(t *testing.T) {
	c := Caps{Lock: "mutex", Family: "mutex", Reentrant: true, OneLease: true, Faults: semCaps.Faults}
	for _, sh := range fitting(c) {
		if sh.Name == "short-joins-long" || sh.Name == "late-release" || sh.Name == "write-reenters-shorter" {
			t.Errorf("shape %s fits a lock with one lease", sh.Name)
		}
	}
	var runs int
	e := &Explorer{Caps: c, Seed: 1, MaxRuns: 40, Run: func(_ context.Context, tr Trial) Outcome {
		runs++
		for _, st := range tr.Genome.Schedule.Steps {
			if st.Lease != nil {
				t.Fatalf("run %d: step %s has a lease of its own", tr.N, st.Name)
			}
		}
		return Outcome{Verdict: "valid", Transitions: map[string]int{fmt.Sprint(tr.N % 7): 1}}
	}}
	e.Search(context.Background())
	if runs != 40 {
		t.Fatalf("%d runs", runs)
	}
}
