package runner

import (
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/lockspec"
	"github.com/lockcheck/lockcheck/runflag"
)

// childProcesses lists this process's children (Linux's /proc/self/task/*/children), nil if unreadable.
func childProcesses(t *testing.T) []string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// entries lists what dir holds (nothing, if it does not exist).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Every way of making a test's lock clients arrives through the Test's provider, resolved by Prepare: a Go
// kind, a spec lock (its own kind, not registered), a registered worker, a worker command, and a worker
// beside the Go clients. Prepare is pure: it starts no process (neither a worker nor a worker's build) and
// writes no file (no run directory, no build cache, nothing in the temporary directory).
func TestPrepareResolvesTheClientProvider(t *testing.T) {
	tmp := t.TempDir()
	cache, temp := filepath.Join(tmp, "cache"), filepath.Join(tmp, "tmp")
	if err := os.Mkdir(temp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKCHECK_CACHE", cache) // where a registered worker's build would go
	t.Setenv("TMPDIR", temp)
	// A stand-in worker that leaves a mark if anything runs it.
	mark := filepath.Join(tmp, "ran")
	stand := filepath.Join(tmp, "worker.sh")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\ntouch '"+mark+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join("..", "examples", "locks", "rwlock.yaml")
	before := childProcesses(t)

	for _, tc := range []struct {
		name    string
		set     func(*Options)
		source  ClientSource
		lock    string // the test's lock (Options.Lock, Kind.Name)
		named   string // the provider's name
		version bool   // a version is resolved
		command []string
		mixed   bool
	}{
		{"go kind", func(o *Options) { o.Lock = "fenced" }, GoClients, "fenced", "fenced", false, nil, false},
		{"spec lock", func(o *Options) { o.LockSpec = spec }, SpecClients, "rwlock-zset", "rwlock-zset", false, nil, false},
		{"registered worker", func(o *Options) { o.Lock, o.Worker.Client = "naive", "naive-safe" },
			WorkerClients, "naive", "naive-safe", true, nil, false},
		{"worker command", func(o *Options) { o.Lock, o.Worker.Cmd = "mutex", stand },
			WorkerClients, "mutex", "cmd", false, []string{stand}, false},
		{"worker beside the Go clients", func(o *Options) { o.Worker.Client = "redisson,go" },
			WorkerClients, "reentrant", "redisson", true, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := quickOptions(t)
			o.Results = filepath.Join(tmp, "results")
			tc.set(&o)
			dirs := map[string]string{"the build cache": cache, "the temporary directory": temp, "the results": o.Results}
			had := map[string][]string{}
			for what, d := range dirs {
				had[what] = entries(t, d)
			}
			test, err := Prepare(o)
			if err != nil {
				t.Fatal(err)
			}
			p := test.Clients
			if p.Source != tc.source || p.Name != tc.named || (p.Version != "") != tc.version ||
				!slices.Equal(p.Command, tc.command) || p.Mixed != tc.mixed {
				t.Fatalf("provider %s %q version %q command %q mixed %v, want %s %q (version: %v) %q %v",
					p.Source, p.Name, p.Version, p.Command, p.Mixed, tc.source, tc.named, tc.version, tc.command, tc.mixed)
			}
			if test.Options.Lock != tc.lock || test.Kind.Name != tc.lock {
				t.Errorf("lock %q, kind %q, want %q", test.Options.Lock, test.Kind.Name, tc.lock)
			}
			switch {
			case tc.source == GoClients || tc.mixed: // the registered kind's own Go clients
				if k, _ := kinds.Lookup(tc.lock); test.Kind != k || p.New == nil {
					t.Errorf("the Go clients are not the registered kind %s's", tc.lock)
				}
			case tc.source == SpecClients:
				if _, err := kinds.Lookup(tc.lock); err == nil {
					t.Errorf("the spec lock %s was registered process-wide", tc.lock)
				}
				if test.Kind.Source != spec || test.Kind.Family != kinds.RW {
					t.Errorf("kind from %q, family %s: not the spec's", test.Kind.Source, test.Kind.Family.Name)
				}
				// Its factory makes the spec's own clients (go-redis dials lazily: nothing is reached).
				c, err := p.New(locks.Env{Client: "c1", Addrs: []string{"127.0.0.1:1"}, Lease: time.Second,
					Redisson: locks.DefaultRedissonConfig(), Rec: history.NewRecorder(io.Discard, history.NewClock())})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if !test.Kind.Family.Accepts(c) || !strings.HasPrefix(strings.TrimPrefix(typeName(c), "*"), "lockspec.") {
					t.Errorf("the spec's factory made a %s", typeName(c))
				}
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("Prepare ran the worker command")
			}
			for what, d := range dirs {
				if now := entries(t, d); !slices.Equal(now, had[what]) {
					t.Errorf("Prepare wrote into %s (%s): %v, before %v", what, d, now, had[what])
				}
			}
			if now := childProcesses(t); len(now) > len(before) {
				t.Errorf("Prepare left child processes: %v (before: %v)", now, before)
			}
		})
	}
}

// A negative control's own run flags are applied to the options by Prepare, where the command line gave
// none; a caller of the package (no Given) gets its options as they are; a run with faults gets none.
func TestPrepareAppliesControlFlags(t *testing.T) {
	o := quickOptions(t)
	o.Lock, o.Given = "naive", map[string]bool{"time": true}
	test, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := test.Options; got.Lease != 300*time.Millisecond || got.Hold != "400ms-1s" {
		t.Errorf("lease %s hold %s, want the control's 300ms and 400ms-1s", got.Lease, got.Hold)
	}
	if len(test.Notes) != 1 || !strings.Contains(test.Notes[0], "naive is a negative control") {
		t.Errorf("notes %q", test.Notes)
	}

	o.Given, o.Lease = map[string]bool{"lease": true}, 2*time.Second // the user's --lease stays
	if test, err = Prepare(o); err != nil {
		t.Fatal(err)
	}
	if test.Options.Lease != 2*time.Second || test.Options.Hold != "400ms-1s" {
		t.Errorf("given --lease 2s: lease %s hold %s", test.Options.Lease, test.Options.Hold)
	}
	if len(test.Notes) != 1 || !strings.HasSuffix(test.Notes[0], "(run with --hold 400ms-1s)") {
		t.Errorf("given --lease 2s: notes %q, want the hint to name only the flag it set", test.Notes)
	}
	// Both given: the hint has nothing to add (issue 31: it said "run with --lease 300ms --hold 400ms-1s").
	o.Given, o.Lease, o.Hold = map[string]bool{"lease": true, "hold": true}, 300*time.Millisecond, "400ms-1s"
	if test, err = Prepare(o); err != nil {
		t.Fatal(err)
	}
	if len(test.Notes) != 1 || strings.Contains(test.Notes[0], "run with") {
		t.Errorf("given --lease and --hold: notes %q, want no hint to run with them", test.Notes)
	}
	for what, change := range map[string]func(*Options){
		"no command line": func(o *Options) { o.Given = nil },
		"a fault":         func(o *Options) { o.Nemesis, o.Time = "kill", time.Minute },
	} {
		o := quickOptions(t)
		o.Lock, o.Given = "naive", map[string]bool{}
		change(&o)
		test, err := Prepare(o)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if test.Options.Lease != o.Lease || test.Options.Hold != o.Hold || len(test.Notes) > 0 {
			t.Errorf("%s: lease %s hold %s notes %q, want the options as given", what, test.Options.Lease, test.Options.Hold, test.Notes)
		}
	}

	// A spec's control flags come through the same path.
	o = quickOptions(t)
	o.LockSpec, o.Given = filepath.Join("..", "examples", "locks", "setnx-broken.yaml"), map[string]bool{}
	if test, err = Prepare(o); err != nil {
		t.Fatal(err)
	}
	if test.Options.Lease != 300*time.Millisecond || test.Options.Lock != "setnx-broken" || len(test.Notes) != 1 {
		t.Errorf("spec control: lease %s lock %s notes %q", test.Options.Lease, test.Options.Lock, test.Notes)
	}
}

// Every flag a control may set has its option: the list lives in lockspec, the setter here.
func TestEveryControlFlagSetsItsOption(t *testing.T) {
	sample := map[string]string{"--lease": "1s-2s", "--wait": "300ms", "--hold": "1s-2s", "--readers": "2:1",
		"--reentry": "0.5", "--watchdog": "1s", "--timeout": "1s", "--time": "1s", "--quiet": "1s"}
	for _, f := range lockspec.ControlFlags() {
		v := sample[f]
		if v == "" {
			v = "7"
		}
		o, d := Defaults(), Defaults()
		if err := o.setFlag(strings.TrimPrefix(f, "--"), v); err != nil {
			t.Errorf("%s %s: %v", f, v, err)
		}
		if reflect.DeepEqual(o.describe(), d.describe()) {
			t.Errorf("%s %s changed no option", f, v)
		}
	}
	if lo, hi, err := runflag.ParseDurationRange("1s-10s"); lo != time.Second || hi != 10*time.Second || err != nil {
		t.Errorf("1s-10s: %s %s %v", lo, hi, err)
	}
}

// A control's flags are read by the run's own flag definitions (Options.Flags), the one place that knows
// a flag's name: every flag of lockcheck run that Options defines can be set by name, as its command line
// reads it, and setting one leaves the others as they were.
func TestSetFlagKnowsEveryRunFlag(t *testing.T) {
	sample := map[string]string{"lease": "1s-2s", "wait": "300ms", "hold": "1s-2s", "readers": "2:1", "on-lost": "stop",
		"nemesis-trigger": "true", "reentry": "0.5", "cross-thread": "0.5", "force-unlock": "0.5"}
	o := Defaults()
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.Flags(f)
	n := 0
	f.VisitAll(func(fl *pflag.Flag) {
		n++
		v, ok := sample[fl.Name]
		switch {
		case ok:
		case fl.Value.Type() == "duration":
			v = "7s"
		case strings.HasPrefix(fl.Value.Type(), "int"):
			v = "7"
		default:
			v = "x7"
		}
		got := Defaults()
		got.NemesisTargets = "kept"
		if err := got.setFlag(fl.Name, v); err != nil {
			t.Errorf("--%s %s: %v", fl.Name, v, err)
			return
		}
		want := Defaults()
		want.NemesisTargets = "kept"
		wf := pflag.NewFlagSet("run", pflag.ContinueOnError)
		want.Flags(wf)
		if err := wf.Parse([]string{"--" + fl.Name + "=" + v}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("--%s %s: set by name %+v, parsed %+v", fl.Name, v, got, want)
		}
	})
	if n < 40 {
		t.Fatalf("only %d run flags", n)
	}
	if err := o.setFlag("lock-spec", "x"); err == nil {
		t.Error("--lock-spec is not an option's flag: setting it must fail")
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// A failover window shorter than a promotion takes is said before the run (issue 31: faults.md asked for
// more than 5 s, and the 3 s default was accepted without a word); 6 s is not, nor a fault without a
// minimum.
func TestShortFailoverWindowIsSaid(t *testing.T) {
	for _, c := range []struct {
		nemesis string
		d       time.Duration
		warned  bool
	}{{"failover", 3 * time.Second, true}, {"failover", 6 * time.Second, false}, {"partition", time.Second, false}} {
		o := quickOptions(t)
		o.Topology, o.Nemesis, o.NemesisDuration, o.Time = "sentinel", c.nemesis, c.d, time.Minute
		test, err := Prepare(o)
		if err != nil {
			t.Fatal(err)
		}
		said := slices.ContainsFunc(test.Notes, func(n string) bool {
			return strings.Contains(n, "--nemesis-duration "+c.d.String()+" is short for failover") && strings.Contains(n, "5s or more")
		})
		if said != c.warned {
			t.Errorf("%s %s: notes %q, want a warning: %v", c.nemesis, c.d, test.Notes, c.warned)
		}
	}
}

// TestPrepareRefusesAWatchdogShorterThanItsRenewals: a lock spec whose watchdog renews every second cannot
// keep a 600 ms lease (every hold runs out between renewals): refused in one line, before any node starts.
func TestPrepareRefusesAWatchdogShorterThanItsRenewals(t *testing.T) {
	o := quickOptions(t)
	o.LockSpec = "../examples/twins/watchdog-gives-up/base.yaml"
	o.Watchdog = 600 * time.Millisecond
	_, err := Prepare(o)
	var ue UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "renews every 1s") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("--watchdog 600ms on a spec renewing every 1s: %v", err)
	}
	o.Watchdog = 3 * time.Second
	if _, err := Prepare(o); err != nil {
		t.Fatalf("--watchdog 3s: %v", err)
	}
}
