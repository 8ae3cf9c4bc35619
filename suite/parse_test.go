package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

// Bad suite files get one line naming what is wrong, before anything is allocated for them or run: runs
// given twice, more runs than a suite may have, a name that is not one path element, an unknown field in
// the suite's words (not Go's), an empty file.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"seed twice", "entries:\n  - name: a\n    seeds: [1, 1]\n", "seeds: 1 appears twice"},
		{"default seed twice", "defaults: {seeds: [3, 2, 3]}\nentries:\n  - name: a\n", "seeds: 3 appears twice"},
		{"topology twice", "entries:\n  - name: a\n    topologies: [single, single]\n", "run a/single/none/1 appears twice"},
		{"nemesis twice", "entries:\n  - name: a\n    nemeses: [kill, kill]\n", "appears twice"},
		{"same id", "entries:\n  - name: a\n    nemeses: [\"kill,pause\", \"kill+pause\"]\n", "run a/default/kill+pause/1 appears twice"},
		{"same directory", "entries:\n  - name: a_b\n  - name: a\n    topologies: [b_default]\n", "runs a_b/default/none/1 and a/b_default/none/1 would share the directory runs/a_b_default_none_1"},
		{"huge count", "entries:\n  - name: a\n    seeds: 2000000000\n", "2000000000 is more than the 10000 runs"},
		{"huge product", "defaults: {seeds: 200}\nentries:\n  - name: a\n    topologies: [" + strings.Repeat("t,", 99) + "t]\n", "100 topologies × 1 nemeses × 200 seeds: more than the 10000 runs"},
		{"huge in all", "defaults: {seeds: 6000}\nentries:\n  - name: a\n  - name: b\n", `entry "b": 1 topologies × 1 nemeses × 6000 seeds: more than the 10000 runs a suite may have (4000 left after the entries before it)`},
		{"long id", "entries:\n  - name: a\n    topologies: [" + strings.Repeat("x", 300) + "]\n", "more than 200"},
		{"many flags", "entries:\n  - name: a\n    flags: {" + manyFlags(101) + "}\n", "flags: 101 of them"},
		{"escaping name", "name: ../../../escaped\nentries:\n  - name: a\n", `name "../../../escaped": not a name`},
		{"dot name", "name: ..\nentries:\n  - name: a\n", `name "..": not a name`},
		{"unknown field", "entries:\n  - name: c\n    colour: red\n", "line 3: field colour not found in an entry (fields: name, lock, client, lock-spec, schedule, topologies, nemeses, seeds, time, flags, expect)"},
		{"unknown top field", "nmae: x\nentries:\n  - name: c\n", "line 1: field nmae not found in the suite (fields: name, defaults, entries, repro)"},
		{"wrong type", "entries: 3\n", "line 1: want a list of entries, got an integer `3`"},
		{"odd field name", "entries:\n  - name: c\n    \"a\\nb\\e[31m\": 1\n", `field "a\nb\x1b[31m" not found in an entry`},
		{"schedule with nemeses", "entries:\n  - name: a\n    schedule: s.yaml\n    nemeses: [kill]\n", "schedule: its faults are its steps: give no nemeses"},
		{"schedule as a flag", "entries:\n  - name: a\n    flags: {schedule: s.yaml}\n", "flags: schedule is a field of its own"},
		{"empty", "", "the file is empty"},
		{"only comments", "# nothing yet\n", "the file is empty"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(c.body), "/")
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\n\x1b") || strings.Contains(err.Error(), "suite.Entry") {
				t.Fatalf("got %v; want one line with %q", err, c.want)
			}
		})
	}
}

func manyFlags(n int) string {
	var f []string
	for i := range n {
		f = append(f, "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))+": 1")
	}
	return strings.Join(f, ", ")
}

// The bounds leave room for what suites are: the shipped ones, and a suite of exactly MaxRuns runs.
func TestParseBoundsAdmitSuites(t *testing.T) {
	s, err := Parse("t.yaml", []byte("defaults: {seeds: 5000}\nentries:\n  - name: a\n  - name: b\n    seeds: [7, -7, 0]\n"), "/")
	if err != nil || len(s.Cases) != 5003 {
		t.Fatalf("%v", err)
	}
	if _, err := Parse("t.yaml", []byte("defaults: {seeds: 10000}\nentries:\n  - name: a\n"), "/"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "examples", "suites", "*.yaml"))
	catalog, _ := filepath.Glob(filepath.Join("..", "repro", "catalog", "*.yaml"))
	for _, f := range append(files, catalog...) {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// A suite file that is a device or a FIFO is refused at once, in one line: no endless read, no wait for a
// writer; one over the bound is refused unread.
func TestLoadSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("#"+strings.Repeat("x", safefile.SuiteMax)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a FIFO)"},
		{dir, "not a regular file (a directory)"},
		{big, "more than the 1 MiB"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v; want one line with %q", c.path, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Load still reading after 10s", c.path)
		}
	}
}

// Run itself refuses cases that would share a directory, as compare or repro could make them in code: the
// second run would delete the first's directory ("..": the suite's own).
func TestRunRefusesSharedDirectories(t *testing.T) {
	for _, cases := range [][]Case{
		{NewCase("l/s/1", "l", 1, nil), NewCase("l/s/1", "l", 1, nil)},
		{NewCase("..", "l", 1, nil)},
	} {
		dir := filepath.Join(t.TempDir(), "s")
		_, err := Run(t.Context(), &Suite{Name: "x", Cases: cases}, "", Config{Exe: "/nonexistent", Dir: dir})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v; want a refusal", cases[0].ID, err)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: the suite directory was made", cases[0].ID)
		}
	}
}

// A schedule (default or entry) is passed to each run, its path taken from the suite file's directory.
func TestParseSchedule(t *testing.T) {
	s, err := Parse("t.yaml", []byte("defaults: {schedule: s/one.yaml}\nentries:\n  - name: a\n  - name: b\n    schedule: /abs/two.yaml\n"), "/base")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "/base/s/one.yaml", "b": "/abs/two.yaml"}
	for _, c := range s.Cases {
		i := slices.Index(c.Args, "--schedule")
		if i < 0 || c.Args[i+1] != want[c.Entry] {
			t.Errorf("%s: %q, want --schedule %s", c.Entry, c.Args, want[c.Entry])
		}
	}
}
