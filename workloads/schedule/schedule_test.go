package schedule

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

// Every bad file is refused with one line that names the file and, for a step's fault, the step by index
// and name.
func TestParseRefusesBadFiles(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "empty file"},
		{"stepz: []", "unknown key stepz"},
		{"steps: []", "no steps"},
		{"steps: [1]", "step 1 (unnamed): line 1: want a mapping"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, colour: red}", `step 1 (a): unknown key "colour"`},
		{"steps:\n  - {name: a, client: c1, thread: x, acquire: lock}", `step 1 (a): thread "x": want a whole number, 1..64`},
		// Issue 36 item 10: yaml.v3 decoded 1.5 into the int thread as 1, and 2.9 as 2.
		{"steps:\n  - {name: a, client: c1, thread: 1.5, acquire: lock}", `step 1 (a): thread "1.5": want a whole number`},
		{"steps:\n  - {name: a, client: c1, thread: 2.9, acquire: lock}", `step 1 (a): thread "2.9": want a whole number`},
		{"steps:\n  - {name: a, client: c1, thread: [1], acquire: lock}", `step 1 (a): thread "": want a whole number`},
		// Issue 36 item 8: an about: with ESC, BEL, NUL or a bidi control reached the terminal (a spec's is
		// refused for the same characters, by the same check).
		{"about: \"\\e]0;title\\a\"\nsteps:\n  - {client: c1, acquire: lock}", `about: has the control character '\x1b'`},
		{"about: \"bell\\a\"\nsteps:\n  - {client: c1, acquire: lock}", `about: has the control character '\a'`},
		{"about: \"nul\\0\"\nsteps:\n  - {client: c1, acquire: lock}", `about: has the control character '\x00'`},
		{"about: \"rtl\u202e\"\nsteps:\n  - {client: c1, acquire: lock}", `about: has the control character '\u202e'`},
		{"steps:\n  - {name: a, client: c1, acquire: grab}", `step 1 (a): acquire "grab": want lock`},
		{"steps:\n  - {name: a, client: c1}", "step 1 (a): want exactly one of acquire, leave, release and fault"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, release: true}", "want exactly one"},
		{"steps:\n  - {name: a, client: c1, release: true}", "step 1 (a): c1 releases lock-0 without an earlier acquire"},
		{"steps:\n  - {client: c1, acquire: lock}\n  - {name: r, client: c1, thread: 2, release: true}", "step 2 (r): c1/2 releases"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, after: b}\n  - {name: b, client: c2, acquire: lock}", `step 1 (a): after "b": no earlier step`},
		{"steps:\n  - {name: a, client: c1, acquire: lock}\n  - {name: a, client: c2, acquire: lock}", "step 2 (a): the name is taken by step 1 (a)"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, lease: -1s}", "step 1 (a): lease -1s: must not be negative"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, at: soon}", `step 1 (a): at "soon": want a duration`},
		{"steps:\n  - {name: a, client: c1, acquire: lock, delay: 1s}", "delay is counted from the step named by after"},
		{"steps:\n  - {name: a, client: c65, acquire: lock}", "step 1 (a): client c65: at most c64"},
		{"steps:\n  - {name: a, client: x1, acquire: lock}", `client "x1": want c1..c64`},
		{"steps:\n  - {name: a, client: c1, thread: 65, acquire: lock}", "thread 65"},
		{"steps:\n  - {name: a, client: c1, key: lock-64, acquire: lock}", `key "lock-64"`},
		{"steps:\n  - {name: a, client: c1, key: other, acquire: lock}", `key "other"`},
		{"steps:\n  - {name: f, fault: kill}", "step 1 (f): fault kill: say how long it lasts"},
		// Issue 36 item 4: a loop of 1 ns faults flooded the history.
		{"loop: true\nsteps:\n  - {name: f, fault: client-pause, targets: [c1], for: 1ns}", "step 1 (f): fault client-pause: for 1ns: at least 10ms"},
		{"steps:\n  - {name: f, fault: kill, client: c1, for: 1s}", "a fault step takes targets and for"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, for: 1s}", "targets and for belong to a fault step"},
		{"steps:\n  - {name: a, client: c1, release: false}", "release: false"},
		{"steps:\n  - {name: a, client: c1, leave: true}", "step 1 (a): c1 leaves lock-0 without an earlier acquire"},
		{"steps:\n  - {name: a, client: c1, acquire: lock, leave: true}", "want exactly one of acquire, leave, release and fault"},
		{"steps:\n  - {name: a, client: c1, acquire: lock}\n---\nsteps: []", "more than one YAML document"},
	} {
		_, err := Parse([]byte(c.text), "bad.yaml")
		switch {
		case err == nil:
			t.Errorf("%q: accepted, want %q", c.text, c.want)
		case !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "schedule bad.yaml: "):
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%q: more than one line: %q", c.text, err)
		}
	}
	if _, err := Load("testdata-that-is-not-there.yaml"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := Load("."); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
}

// Check refuses what the run's lock cannot play.
func TestCheckAgainstTheLock(t *testing.T) {
	mutex := Caps{Lock: "reentrant", Family: "mutex", Reentrant: true, Time: 30 * time.Second}
	rw := Caps{Lock: "rwlock", Family: "rwlock", Reentrant: true}
	for _, c := range []struct {
		text string
		caps Caps
		want string // "" for accepted
	}{
		{"steps:\n  - {client: c1, acquire: lock}", mutex, ""},
		{"steps:\n  - {name: r, client: c1, acquire: read}", mutex, "step 1 (r): acquire read: lock reentrant is a mutex"},
		{"steps:\n  - {name: l, client: c1, acquire: lock}", rw, "step 1 (l): acquire lock: lock rwlock is a rwlock"},
		{"steps:\n  - {client: c1, acquire: read}\n  - {client: c1, acquire: write}", rw, ""},
		{"steps:\n  - {client: c1, acquire: lock}\n  - {name: again, client: c1, acquire: lock}",
			Caps{Lock: "naive", Family: "mutex"}, "step 2 (again): c1 acquires lock-0 again while it holds it, and lock naive is not re-entrant"},
		{"steps:\n  - {client: c1, acquire: lock}\n  - {client: c1, release: true}\n  - {client: c1, acquire: lock}",
			Caps{Lock: "naive", Family: "mutex"}, ""},
		{"steps:\n  - {name: late, at: 30s, client: c1, acquire: lock}", mutex, "step 1 (late): at 30s is not before --time 30s"},
		{"steps:\n  - {client: c1, acquire: lock}", Caps{Lock: "semaphore", Family: "semaphore"}, "lock semaphore is a semaphore: its steps acquire permit"},
		{"steps:\n  - {client: c1, acquire: permit}\n  - {client: c1, acquire: permit}", Caps{Lock: "expirable-semaphore", Family: "expirable-semaphore"}, ""},
		{"steps:\n  - {name: p, client: c1, acquire: permit}", mutex, "step 1 (p): acquire permit: lock reentrant is a mutex: its steps acquire lock"},
		{"steps:\n  - {client: c1, acquire: lock}", Caps{Lock: "latch", Family: "latch"}, "latch family"},
		{"steps:\n  - {client: c1, acquire: lock}", Caps{Lock: "multi", Family: "mutex", Group: true}, "single-key locks"},
	} {
		s, err := Parse([]byte(c.text), "s.yaml")
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		err = s.Check(c.caps)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q on %s: %v, want %q", c.text, c.caps.Lock, err, c.want)
		}
	}
}

// The shipped schedules (and the broken twins') parse, and Marshal writes each back as a file that reads to
// the same steps.
func TestExamplesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../../examples/schedules/*.yaml")
	if len(files) < 3 {
		t.Fatalf("%d schedules in examples/schedules", len(files))
	}
	twins, _ := filepath.Glob("../../examples/twins/*/schedule.yaml")
	if len(twins) < 8 {
		t.Fatalf("%d schedules in examples/twins", len(twins))
	}
	files = append(files, twins...)
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(s.Marshal(), "marshalled")
		if err != nil {
			t.Fatalf("%s marshalled:\n%s\n%v", f, s.Marshal(), err)
		}
		if !reflect.DeepEqual(back.Steps, s.Steps) || back.About != s.About || back.Lock != s.Lock || back.Loop != s.Loop {
			t.Errorf("%s: read back differs:\n%s", f, s.Marshal())
		}
		if again := back.Marshal(); string(again) != string(s.Marshal()) {
			t.Errorf("%s: Marshal is not stable:\n%s\n%s", f, s.Marshal(), again)
		}
	}
	doc, err := os.ReadFile("../../docs/schedules.md") // the format's example in the docs reads too
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(doc), "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	if s, err := Parse([]byte(block), "docs/schedules.md"); err != nil || len(s.Steps) < 5 || len(s.Faults()) != 1 {
		t.Errorf("the docs' example: %v", err)
	}
	d, z := 1500*time.Millisecond, time.Duration(0)
	s := &Schedule{About: `a "quoted" about`, Loop: true, Steps: []Step{
		{Name: "a", Client: "c2", Thread: 3, Key: "lock-1", Acquire: Read, Lease: &d, Wait: &z},
		{After: "a", Client: "c2", Thread: 3, Key: "lock-1", Leave: true},
		{At: d, After: "a", Delay: d, Client: "c2", Thread: 3, Key: "lock-1", Release: true},
		{Fault: "partition", Targets: []string{"c1", "n1"}, For: d},
	}}
	back, err := Parse(s.Marshal(), "built")
	if err != nil || !reflect.DeepEqual(back.Steps, s.Steps) || back.About != s.About || !back.Loop {
		t.Fatalf("%v:\n%s", err, s.Marshal())
	}
	if n := back.Clients(); n != 2 {
		t.Errorf("Clients %d, want 2", n)
	}
	if n := back.Threads(); n != 3 {
		t.Errorf("Threads %d, want 3", n)
	}
	if n := back.Keys(); n != 2 {
		t.Errorf("Keys %d, want 2", n)
	}
}

// Aim draws a fault step's targets within the ones it names, from the seed, and refuses targets the fault
// would ignore.
func TestAimFaults(t *testing.T) {
	env := &nemesis.Env{Topology: "single", Nodes: []string{"n1"}, Clients: []string{"c1", "c2", "c3"},
		Client: func(string) nemesis.Client { return nil }}
	s, err := Parse([]byte("steps:\n  - {fault: client-pause, targets: [c2], for: 1s}\n  - {fault: client-pause, for: 1s}\n"+
		"  - {client: c1, acquire: lock}"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Aim(7, env); err != nil {
		t.Fatal(err)
	}
	if got := nemesis.TargetStrings(s.Aimed(0)); !reflect.DeepEqual(got, []string{"c2"}) {
		t.Errorf("named target: %v", got)
	}
	first := nemesis.TargetStrings(s.Aimed(1))
	if len(first) != 1 {
		t.Errorf("drawn: %v", first)
	}
	if err := s.Aim(7, env); err != nil || !reflect.DeepEqual(nemesis.TargetStrings(s.Aimed(1)), first) {
		t.Errorf("the same seed drew %v, then %v", first, s.Aimed(1))
	}
	if s.Aimed(2) != nil {
		t.Error("an acquire has targets")
	}
	// hold-replies holds every client's replies unless a step names the one whose grant must come late.
	held, err := Parse([]byte("steps:\n  - {fault: hold-replies, targets: [c2], for: 1s}\n  - {fault: hold-replies, for: 1s}"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Aim(7, env); err != nil {
		t.Fatal(err)
	}
	if got := nemesis.TargetStrings(held.Aimed(0)); !reflect.DeepEqual(got, []string{"c2->n1"}) {
		t.Errorf("hold-replies aimed at c2: %v", got)
	}
	if got := nemesis.TargetStrings(held.Aimed(1)); len(got) != 3 {
		t.Errorf("hold-replies unaimed: %v, want every client's link", got)
	}
	for text, want := range map[string]string{
		"steps:\n  - {name: k, fault: kill, targets: [c1], for: 1s}": "step 1 (k): fault kill: targets c1: fault kill hits nodes",
		"steps:\n  - {name: k, fault: kill, targets: [n9], for: 1s}": `"n9" is no size`,
		"steps:\n  - {name: k, fault: nonesuch, for: 1s}":            `unknown fault "nonesuch"`,
		"steps:\n  - {name: k, fault: failover, for: 1s}":            "failover needs primaries with replicas",
	} {
		s, err := Parse([]byte(text), "f.yaml")
		if err != nil {
			t.Fatal(err)
		}
		err = s.Aim(1, env)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "--nemesis") {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// Issue 36 item 4: a loop whose cycle can play in under CycleFloor is paced, one whose steps take longer is
// not; the fault budget gives FaultBurst at once and counts the rest.
func TestLoopFloorAndFaultBudget(t *testing.T) {
	for _, c := range []struct {
		text     string
		shortest time.Duration
		paced    bool
	}{
		{"loop: true\nsteps:\n  - {fault: client-pause, targets: [c1], for: 10ms}", 10 * time.Millisecond, true},
		{"loop: true\nsteps:\n  - {client: c1, acquire: lock}\n  - {client: c1, release: true}", 0, true},
		{"steps:\n  - {client: c1, acquire: lock}", 0, false},
		{"loop: true\nsteps:\n  - {name: a, client: c1, acquire: lock}\n  - {client: c1, after: a, delay: 150ms, release: true}", 150 * time.Millisecond, false},
		{"loop: true\nsteps:\n  - {name: a, fault: kill, for: 50ms}\n  - {client: c1, after: a, delay: 60ms, acquire: lock}", 60 * time.Millisecond, true},
	} {
		s, err := Parse([]byte(c.text), "x.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Shortest(); got != c.shortest || s.Paced() != c.paced {
			t.Errorf("%q: shortest %s paced %v, want %s %v", c.text, got, s.Paced(), c.shortest, c.paced)
		}
	}
	b := &faultBudget{tokens: FaultBurst, at: time.Now()}
	n := 0
	for b.take() {
		n++
	}
	if n != FaultBurst || b.skipped != 1 {
		t.Fatalf("%d faults taken at once, %d skipped: want %d and 1", n, b.skipped, FaultBurst)
	}
}
