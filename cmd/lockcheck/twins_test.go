package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twin is one line of examples/twins/twins.txt: a broken twin of a shipped lock, the flags of the lock
// both run with, the twin's own flag, the base's (none: the lock as shipped) and the random workload's.
type twin struct {
	name                     string
	lock, twin, base, random []string
}

// readTwins reads examples/twins/twins.txt, with its example paths made relative to this package.
func readTwins(t *testing.T) []twin {
	t.Helper()
	b, err := os.ReadFile("../../examples/twins/twins.txt")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) []string {
		w := strings.Fields(s)
		for i := range w {
			if strings.HasPrefix(w[i], "examples/") {
				w[i] = "../../" + w[i]
			}
		}
		return w
	}
	var out []twin
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 5 {
			t.Fatalf("twins.txt: %q: want 5 fields split by |", line)
		}
		out = append(out, twin{name: strings.TrimSpace(f[0]), lock: words(f[1]), twin: words(f[2]),
			base: words(f[3]), random: words(f[4])})
	}
	return out
}

// Every broken twin (examples/twins) is caught by its schedule, and its unbroken base stays valid on the
// same schedule and seed: the twin's one change is what breaks it, and the schedule's steps are what it
// needs. The steps follow each other by event, so a loaded machine cannot reorder them.
func TestTwinsCaughtBySchedule(t *testing.T) {
	t.Parallel()
	twins := readTwins(t)
	if len(twins) < 8 {
		t.Fatalf("%d twins in examples/twins/twins.txt, want at least 8 (issue 37)", len(twins))
	}
	for _, tw := range twins {
		schedule := filepath.Join("../../examples/twins", tw.name, "schedule.yaml")
		for _, c := range []struct {
			which string
			flag  []string
			want  int
		}{{"twin", tw.twin, exitInvalid}, {"base", tw.base, exitValid}} {
			t.Run(tw.name+"/"+c.which, func(t *testing.T) {
				t.Parallel() // runs of 1 to 10 s that mostly wait
				args := append([]string{"run", "--schedule", schedule, "--quiet", "0s", "--seed", "1"}, tw.lock...)
				code, dir := run(t, append(args, c.flag...)...)
				if code != c.want {
					t.Fatalf("lockcheck %s: exit %d, want %d; results: %+v", strings.Join(append(args, c.flag...), " "),
						code, c.want, readResults(t, dir))
				}
				scheduleRecorded(t, dir, tw.name)
			})
		}
	}
}
