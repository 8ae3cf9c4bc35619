package shrink

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

var recorded = []string{"lockcheck", "run", "--clients=8", "--lock=naive", "--results=/tmp/r", "--time=30s",
	"--external-password=REDACTED", "--nemesis=client-pause,kill", "--seed=652448"}

const options = `{"clients": 8, "threads": 2, "hold": "400ms-1s", "lease": "300ms", "reentry": 0.2, "nemesis_trigger": false, "nemesis_interval": "5s", "keys": 0}`

func TestFromRunKeepsTheGivenFlagsAndReadsTheRest(t *testing.T) {
	c, err := FromRun(recorded, json.RawMessage(options))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Args(), []string{"--clients=8", "--lock=naive", "--time=30s", "--nemesis=client-pause,kill"}; !slices.Equal(got, want) {
		t.Fatalf("args %q, want %q (no seed, results or redacted secret)", got, want)
	}
	for flag, want := range map[string]string{"threads": "2", "hold": "400ms-1s", "reentry": "0.2", "nemesis-trigger": "false", "clients": "8"} {
		if got := c.Get(flag); got != want {
			t.Errorf("Get(%s) = %q, want %q", flag, got, want)
		}
	}
	c2 := c.With("clients", "4").With("hold", "400ms-700ms")
	if got := c2.Args(); !slices.Contains(got, "--clients=4") || !slices.Contains(got, "--hold=400ms-700ms") || slices.Contains(got, "--clients=8") {
		t.Fatalf("With: %q", got)
	}
	if c.Get("clients") != "8" {
		t.Fatal("With changed the command it was called on")
	}
	if got := c.With("client-cmd", "python3 my worker.py").Line(5); !strings.HasSuffix(got, "'--client-cmd=python3 my worker.py' --seed=5") {
		t.Fatalf("Line: %s", got)
	}
	for _, bad := range [][]string{{"lockcheck", "check", "h.jsonl"}, {"lockcheck", "run", "--time", "3s"}} {
		if _, err := FromRun(bad, nil); err == nil {
			t.Errorf("FromRun(%q): no error", bad)
		}
	}
}

func TestReducersStepDown(t *testing.T) {
	c, err := FromRun(recorded, json.RawMessage(options))
	if err != nil {
		t.Fatal(err)
	}
	next := func(flag string, c Cmd) []string {
		for _, r := range Reducers {
			if r.Flag == flag {
				return r.Next(c)
			}
		}
		t.Fatalf("no reducer of --%s", flag)
		return nil
	}
	for _, tc := range []struct {
		flag string
		c    Cmd
		want []string
	}{
		{"time", c, []string{"15s"}},
		{"time", c.With("time", "3s").With("quiet", "1s").With("nemesis", "none"), []string{"2s"}},
		{"time", c.With("time", "2s").With("quiet", "1s").With("nemesis", "none"), nil},
		{"time", c.With("time", "6s").With("quiet", "3s").With("nemesis", "none"), []string{"4s"}}, // the quiet time fits inside
		{"time", c.With("time", "5s").With("quiet", "3s").With("nemesis", "none"), nil},            // 4 s would save too little
		{"quiet", c.With("quiet", "3s"), []string{"1.5s"}},
		{"nemesis", c, []string{"kill", "client-pause"}},
		{"nemesis", c.With("nemesis", "kill"), []string{"none"}},
		{"nemesis", c.With("nemesis", "none"), nil},
		{"time", c.With("quiet", "3s").With("nemesis-duration", "3s"), []string{"21.5s"}},       // both faults fit: 2 × (6.25s + 3s) + 3s
		{"time", c.With("quiet", "3s").With("nemesis-duration", "3s").With("time", "25s"), nil}, // 21.5 s would save too little
		{"nemesis-trigger", c.With("nemesis", "kill"), nil},                                     // kill takes no trigger
		{"nemesis-trigger", c.With("nemesis", "client-pause"), []string{"true"}},
		{"nemesis-trigger", c.With("nemesis", "client-pause").With("nemesis-trigger", "true"), nil},
		{"clients", c, []string{"4"}},
		{"clients", c.With("clients", "1"), nil},
		{"keys", c, nil}, // 0: the lock's default
		{"keys", c.With("keys", "4"), []string{"1", "2"}},
		{"reentry", c, []string{"0"}},
		{"reentry", c.With("reentry", "0"), nil},
		{"hold", c, []string{"400ms-700ms", "700ms-1s"}},
		{"hold", c.With("hold", "400ms-475ms"), nil}, // a quarter of its low end wide
		{"lease", c, nil},
		// Halves read as a person writes them: 16ms, not 15.9375ms; 330ms, not 333.333333ms.
		{"hold", c.With("hold", "10ms-21.875ms"), []string{"10ms-16ms", "16ms-21.875ms"}},
		{"quiet", c.With("quiet", "6.666666666s"), []string{"3.3s"}},
	} {
		if got := next(tc.flag, tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("--%s from %s: %q, want %q", tc.flag, tc.c.Get(tc.flag), got, tc.want)
		}
	}
}

// A run whose last fault is dropped loses the flags only faults use: a fault-free run refuses a target.
func TestDroppingTheLastFaultDropsItsFlags(t *testing.T) {
	c, err := FromRun([]string{"lockcheck", "run", "--nemesis=client-pause", "--nemesis-targets=all", "--nemesis-interval=1s", "--clients=3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := faultFree(c.With("nemesis", "none")).Args(); !slices.Equal(got, []string{"--nemesis=none", "--clients=3"}) {
		t.Fatalf("%q", got)
	}
	if got := faultFree(c.With("nemesis", "kill")).Args(); len(got) != 4 {
		t.Fatalf("a run with a fault lost its fault flags: %q", got)
	}
	trig := c.With("nemesis", "client-pause,latency").With("nemesis-trigger", "true")
	if got := faultFree(trig.With("nemesis", "latency")).Get("nemesis-trigger"); got != "" {
		t.Fatalf("latency takes no trigger, but --nemesis-trigger=%s stayed", got)
	}
	if got := faultFree(trig.With("nemesis", "client-pause")).Get("nemesis-trigger"); got != "true" {
		t.Fatalf("client-pause takes a trigger, but --nemesis-trigger=%q", got)
	}
}

func results(checks ...checker.Result) *report.Results {
	r := &report.Results{Valid: checker.Valid, Checkers: checks}
	for _, c := range checks {
		if c.Valid == checker.Invalid {
			r.Valid = checker.Invalid
		}
	}
	return r
}

func TestSignatureLeadsWithTheHarm(t *testing.T) {
	r := results(checker.Result{Checker: "porcupine", Valid: checker.Invalid, At: 1},
		checker.Result{Checker: "told-of-loss", Valid: checker.Invalid, At: 5},
		checker.Result{Checker: "mutual-exclusion", Valid: checker.Invalid, At: 6},
		checker.Result{Checker: "stats", Valid: checker.Valid})
	sig, err := SignatureOf(r, "")
	if err != nil || sig != (Signature{"mutual-exclusion", "overlap"}) {
		t.Fatalf("signature %v, %v: want mutual-exclusion's overlap, although told-of-loss saw it 1 ns sooner", sig, err)
	}
	if sig, err := SignatureOf(r, "porcupine"); err != nil || sig.Kind != "no-legal-order" {
		t.Fatalf("--checker porcupine: %v, %v", sig, err)
	}
	if _, err := SignatureOf(r, "lost-lock"); err == nil || !strings.Contains(err.Error(), "not invalid") {
		t.Fatalf("--checker lost-lock: %v", err)
	}
	if _, err := SignatureOf(results(checker.Result{Checker: "stats", Valid: checker.Valid}), ""); err == nil {
		t.Fatal("a valid run has a signature")
	}
	if ok, at, _ := sig.Match(r); !ok || at != 6 {
		t.Fatalf("the run does not match its own signature: %v %d", ok, at)
	}
	if ok, _, other := sig.Match(results(checker.Result{Checker: "porcupine", Valid: checker.Invalid})); ok || other != "invalid by porcupine only" {
		t.Fatalf("porcupine alone matched an overlap: %v %q", ok, other)
	}
	if ok, _, other := sig.Match(results(checker.Result{Checker: "mutual-exclusion", Valid: checker.Valid})); ok || other != "valid" {
		t.Fatalf("a valid run: %v %q", ok, other)
	}
}

// fails is a fake run: it fails when it has at least two clients, a time of 4 s or more and the kill
// fault; every other flag does not matter.
func fails(c Cmd, _ int64) bool {
	n, _ := strconv.Atoi(c.Get("clients"))
	d, _ := time.ParseDuration(c.Get("time"))
	return n >= 2 && d >= 4*time.Second && strings.Contains(c.Get("nemesis"), "kill")
}

func fakeOracle(calls *int) Oracle {
	return func(ctx context.Context, c Cmd, seeds []int64, name string) Trial {
		*calls++
		t := Trial{Seeds: seeds, Took: time.Second}
		for _, s := range seeds {
			t.Runs++
			if !fails(c, s) {
				t.Other = "valid"
				break // as the real oracle stops at the first seed that is not caught
			}
			t.Caught, t.Firsts = append(t.Caught, s), append(t.Firsts, time.Duration(s))
		}
		return t
	}
}

func TestSearchKeepsOnlyWhatStillFails(t *testing.T) {
	start, err := FromRun(recorded, json.RawMessage(options))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	s := &Search{Confirm: 3, Reducers: Reducers, Oracle: fakeOracle(&calls), Best: start, Seed: 100, BestRun: time.Second}
	s.Run(context.Background())
	if s.Best.Get("clients") != "2" || s.Best.Get("nemesis") != "kill" || s.Best.Get("threads") != "1" ||
		s.Best.Get("reentry") != "0" || s.Best.Get("hold") == "400ms-1s" {
		t.Fatalf("best %q: want 2 clients, the kill fault alone, one thread, no re-entry, a narrower hold", s.Best.Args())
	}
	if d, _ := time.ParseDuration(s.Best.Get("time")); d < 4*time.Second || d > 8*time.Second {
		t.Fatalf("time %s: want the shortest halving that still fails", d)
	}
	if s.Stopped != "" || calls != len(s.Steps) {
		t.Fatalf("stopped %q, %d oracle calls for %d steps", s.Stopped, calls, len(s.Steps))
	}
	seen := map[int64]bool{}
	tried := map[string]bool{}
	for _, st := range s.Steps {
		if st.Outcome == Accepted && st.Caught != 3 {
			t.Errorf("step %d accepted on %d of 3", st.N, st.Caught)
		}
		for _, seed := range st.Seeds {
			if seen[seed] {
				t.Errorf("seed %d used twice", seed)
			}
			seen[seed] = true
		}
		key := strings.Join(st.Args, " ")
		if tried[key] {
			t.Errorf("step %d tried %q again", st.N, key)
		}
		tried[key] = true
	}
}

func TestSearchStopsWithinItsBudget(t *testing.T) {
	start, err := FromRun(recorded, json.RawMessage(options))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Each run takes 40 s and the final measurement two more: no candidate fits in a minute.
	s := &Search{Confirm: 3, Reducers: Reducers, Oracle: fakeOracle(&calls), Best: start, BestRun: 40 * time.Second, Reserve: 2}
	s.Run(ctx)
	if s.Stopped != "budget" || calls != 0 || !slices.Equal(s.Best.Args(), start.Args()) {
		t.Fatalf("stopped %q after %d calls, best %q", s.Stopped, calls, s.Best.Args())
	}
	// Ctrl-C during a step: the step is interrupted, the best so far kept.
	ctx, cancel = context.WithCancel(context.Background())
	n := 0
	s = &Search{Confirm: 3, Reducers: Reducers, Best: start, Oracle: func(c context.Context, cmd Cmd, seeds []int64, name string) Trial {
		if n++; n == 2 {
			cancel()
			return Trial{Seeds: seeds}
		}
		return fakeOracle(&calls)(c, cmd, seeds, name)
	}}
	s.Run(ctx)
	if s.Stopped != "interrupted" || len(s.Steps) != 2 || s.Steps[1].Outcome != Interrupted || s.Best.Get("time") != "15s" {
		t.Fatalf("stopped %q, %d steps, best %q", s.Stopped, len(s.Steps), s.Best.Args())
	}
}
