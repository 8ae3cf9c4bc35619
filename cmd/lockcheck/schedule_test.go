package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// The shipped schedules (examples/schedules) give the verdicts their files and docs/schedules.md state, on
// every seed tried: their steps follow each other by event, so a loaded machine cannot reorder them.
func TestScheduleExamples(t *testing.T) {
	t.Parallel()
	const dir = "../../examples/schedules/"
	for _, c := range []struct {
		name     string
		args     []string
		seeds    []string
		want     int
		violated string // the checker that must find it ("" for a valid run)
	}{
		{"rwlock-shipped", []string{"--schedule", dir + "rwlock-readers-leases.yaml"}, []string{"1", "2"}, exitValid, ""},
		{"rwlock-zset", []string{"--schedule", dir + "rwlock-readers-leases.yaml", "--lock-spec", "../../examples/locks/rwlock.yaml"},
			[]string{"1"}, exitValid, ""},
		{"rwlock-zset-broken", []string{"--schedule", dir + "rwlock-readers-leases.yaml", "--lock-spec", "../../examples/locks/rwlock-zset-broken.yaml"},
			[]string{"1", "2", "3"}, exitInvalid, "mutual-exclusion"},
		{"reentry-lease", []string{"--schedule", dir + "reentry-lease.yaml"}, []string{"1", "2", "3"}, exitInvalid, "mutual-exclusion"},
		{"naive-stale-release", []string{"--schedule", dir + "naive-stale-release.yaml"}, []string{"1", "2", "3"}, exitInvalid, "mutual-exclusion"},
		{"client-pause-watchdog", []string{"--schedule", dir + "client-pause-watchdog.yaml", "--watchdog", "600ms"},
			[]string{"1", "2"}, exitInvalid, "mutual-exclusion"},
	} {
		for _, seed := range c.seeds {
			t.Run(c.name+"/seed"+seed, func(t *testing.T) {
				t.Parallel() // runs of 2 to 3 s that mostly wait
				code, run := run(t, append(append([]string{"run"}, c.args...), "--quiet", "0s", "--seed", seed)...)
				r := readResults(t, run)
				if code != c.want {
					t.Fatalf("exit %d, want %d; results: %+v", code, c.want, r)
				}
				for _, ch := range r.Checkers {
					if c.violated != "" && ch.Checker == c.violated && ch.Valid != false {
						t.Errorf("%s: %v, want invalid", ch.Checker, ch.Valid)
					}
				}
				scheduleRecorded(t, run, c.name)
			})
		}
	}
}

// scheduleRecorded checks what a schedule run leaves beyond its verdict: the file and its hash in the
// results' options, every critical section closed, and the steps' own records.
func scheduleRecorded(t *testing.T, dir, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Options history.Options `json:"options"`
		Notes   []string        `json:"notes"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Options.Schedule, ".yaml") || len(res.Options.ScheduleSHA256) != 64 {
		t.Errorf("results.json options: schedule %q, sha256 %q", res.Options.Schedule, res.Options.ScheduleSHA256)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "the workload was the schedule") {
		t.Errorf("no note of the schedule: %q", res.Notes)
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	grants, nested := 0, 0
	for _, o := range h.Ops {
		if o.Invoke.Src == "" && o.Invoke.F == "tryLock" && o.Outcome() == history.Ok {
			grants++
			if o.Invoke.Args["nested"] == 1 {
				nested++
				if o.Invoke.Args["lease_ms"] != 500 {
					t.Errorf("the re-entry's lease: %d ms, want 500", o.Invoke.Args["lease_ms"])
				}
			}
		}
	}
	if len(h.Sections) != grants-nested {
		t.Errorf("%d critical sections for %d first grants", len(h.Sections), grants-nested)
	}
	if name == "reentry-lease" && nested != 1 {
		t.Errorf("%d granted re-entries, want 1", nested)
	}
	if name == "client-pause-watchdog" {
		w := h.Windows()
		if len(w) != 1 || w[0].Kind != "client-pause" || !w[0].Healed || strings.Join(w[0].Targets, ",") != "c1" {
			t.Errorf("fault windows: %+v", w)
		}
	}
}

// loop: true plays the steps again, every hold released first, until --time ends.
func TestScheduleLoops(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "loop.yaml")
	if err := os.WriteFile(file, []byte(`about: "c1 and c2 take turns"
lock: reentrant
loop: true
steps:
  - {name: one, client: c1, acquire: lock, lease: 2s}
  - {client: c2, after: one, acquire: lock, lease: 2s, wait: 2s}
  - {client: c1, after: one, delay: 100ms, release: true}
  - {client: c2, at: 200ms, release: true}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, dir := run(t, "run", "--schedule", file, "--time", "2s", "--quiet", "0s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d; results: %+v", code, readResults(t, dir))
	}
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, s := range h.Sections {
		per[s.Client]++
	}
	if per["c1"] < 2 || per["c2"] < 2 {
		t.Fatalf("critical sections per client %v: want the steps played more than once", per)
	}
}

// A bad schedule, or one the lock cannot play, is one line and exit 254, before anything starts.
func TestScheduleBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.yaml", "steps:\n  - {client: c1, acquire: lock}\n")
	for _, args := range [][]string{
		{"--schedule", filepath.Join(dir, "missing.yaml")},
		{"--schedule", dir},
		{"--schedule", write("key.yaml", "steps:\n  - {name: a, client: c1, acquire: lock, colour: red}\n")},
		{"--schedule", write("read.yaml", "steps:\n  - {name: a, client: c1, acquire: read}\n"), "--lock", "reentrant"},
		{"--schedule", write("lock.yaml", "steps:\n  - {name: a, client: c1, acquire: lock}\n"), "--lock", "rwlock"},
		{"--schedule", write("rel.yaml", "steps:\n  - {name: a, client: c1, release: true}\n")},
		{"--schedule", write("fault.yaml", "steps:\n  - {name: f, fault: bogus, for: 1s}\n")},
		{"--schedule", ok, "--nemesis", "kill"},
		{"--schedule", ok, "--lock", "semaphore"},
		{"--schedule", write("two.yaml", "steps:\n  - {client: c2, acquire: lock}\n"), "--clients", "1"},
	} {
		code, _ := run(t, append([]string{"run"}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
