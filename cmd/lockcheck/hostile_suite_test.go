package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runSuiteIn runs the built binary in dir with a bound on its time (a hang is a failure, not a stuck
// test), returning its exit code and stderr.
func runSuiteIn(t *testing.T, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("lockcheck %s: still running after 60s", strings.Join(args, " "))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, errb.String()
}

// wantSuiteLine fails unless the command exited 254 with one line on stderr holding want (and none of
// dont).
func wantSuiteLine(t *testing.T, code int, stderr, want string, dont ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	ok := code == exitUsage && len(lines) == 1 && strings.Contains(stderr, want)
	for _, d := range dont {
		ok = ok && (d == "" || !strings.Contains(stderr, d))
	}
	if !ok {
		t.Fatalf("exit %d, stderr %q; want 254 and one line with %q (and not %q)", code, stderr, want, dont)
	}
}

// Hostile suite files: a device, a FIFO, an empty file, seeds given twice or by the billion, a name that
// climbs out of results/suites. Each gets one line and 254 at once, and nothing is written anywhere
// (lockcheck runs three directories down an empty tree, with the default --results).
func TestSuiteHostileFiles(t *testing.T) {
	t.Parallel() // no run starts
	files := t.TempDir()
	fifo := filepath.Join(files, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, file, want, dont string }{
		{"device", "/dev/zero", "not a regular file (a character device)", ""},
		{"fifo", fifo, "not a regular file (a FIFO)", ""},
		{"empty", write("empty.yaml", ""), "the file is empty", "EOF"},
		{"seed twice", write("twice.yaml", "entries:\n  - name: a\n    lock: reentrant\n    seeds: [1, 1]\n"), "seeds: 1 appears twice", ""},
		{"huge seeds", write("huge.yaml", "entries:\n  - name: a\n    lock: reentrant\n    seeds: 2000000000\n"), "more than the 10000 runs a suite may have", ""},
		{"escaping name", write("esc.yaml", "name: ../../../escaped\nentries:\n  - name: a\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n"), `name "../../../escaped": not a name`, ""},
		{"unknown field", write("field.yaml", "entries:\n  - name: c\n    lock: reentrant\n    colour: red\n"), "field colour not found in an entry (fields: name, lock,", "suite.Entry"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			root := t.TempDir()
			cwd := filepath.Join(root, "a", "b", "c")
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
			code, errs := runSuiteIn(t, cwd, nil, "suite", c.file)
			wantSuiteLine(t, code, errs, c.want, c.dont)
			filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
				switch rel, _ := filepath.Rel(root, p); rel {
				case ".", "a", filepath.Join("a", "b"), filepath.Join("a", "b", "c"):
				default:
					t.Errorf("%s was written", p)
				}
				return nil
			})
		})
	}
}

// The shard flags complain about what was typed: an index variable out of range is named with its value
// (not as a --shard nobody gave), and --shard-count without its variable is refused rather than running
// the whole suite.
func TestSuiteShardFlags(t *testing.T) {
	t.Parallel() // --list: no run starts
	file := writeSuite(t, tinySuite)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"negative index", []string{"IDX=-1"}, []string{"--shard-index-env", "IDX", "--shard-count", "2"}, `--shard-index-env IDX="-1": want a 0-based index from 0 to 1 (--shard-count 2)`},
		{"index past the count", []string{"IDX=2"}, []string{"--shard-index-env", "IDX", "--shard-count", "2"}, `IDX="2": want a 0-based index from 0 to 1`},
		{"index not a number", []string{"IDX=one"}, []string{"--shard-index-env", "IDX", "--shard-count", "2"}, `IDX="one"`},
		{"variable not set", nil, []string{"--shard-index-env", "LOCKCHECK_NO_SUCH_VARIABLE", "--shard-count", "2"}, "LOCKCHECK_NO_SUCH_VARIABLE: the variable is not set"},
		{"no count", []string{"IDX=0"}, []string{"--shard-index-env", "IDX"}, "--shard-index-env IDX needs --shard-count"},
		{"count alone", nil, []string{"--shard-count", "2"}, "--shard-count 2 needs --shard-index-env"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			code, errs := runSuiteIn(t, t.TempDir(), c.env, append([]string{"suite", file, "--list"}, c.args...)...)
			wantSuiteLine(t, code, errs, c.want, `--shard "`)
		})
	}
	code, errs := runSuiteIn(t, t.TempDir(), []string{"IDX=1"}, "suite", file, "--list", "--shard-index-env", "IDX", "--shard-count", "2")
	if code != 0 {
		t.Fatalf("a good index: exit %d %s", code, errs)
	}
}

// A --junit the report cannot be written to (under a file, a directory in its place, in /proc) is found
// before the first run starts (the suite directory is not even made), for suite and for merge.
func TestJUnitCheckedFirst(t *testing.T) {
	t.Parallel() // refused before any run starts (before the fix: two 2-second runs)
	file := writeSuite(t, "entries:\n  - name: a\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n    seeds: [1, 2]\n")
	dir := t.TempDir()
	shard := filepath.Join(dir, "shard")
	writeSuiteShard(t, shard, "runs/c/r")
	for _, junit := range []string{filepath.Join(file, "j.xml"), dir, "/proc/lockcheck-junit.xml"} {
		results := filepath.Join(t.TempDir(), "s")
		code, errs := runSuiteIn(t, dir, nil, "suite", file, "--results", results, "--junit", junit)
		wantSuiteLine(t, code, errs, "--junit "+junit)
		if _, err := os.Stat(results); err == nil {
			t.Errorf("--junit %s: the suite started before refusing it", junit)
		}
		out := filepath.Join(t.TempDir(), "m")
		code, errs = runSuiteIn(t, dir, nil, "merge", "--out", out, "--junit", junit, shard)
		wantSuiteLine(t, code, errs, "--junit "+junit)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("merge --junit %s: merged before refusing it", junit)
		}
	}
	// As CI gives it: the report inside the directory the suite or merge makes.
	out := filepath.Join(t.TempDir(), "merged")
	if code, errs := runSuiteIn(t, dir, nil, "merge", "--out", out, "--junit", filepath.Join(out, "junit.xml"), shard); code != 0 {
		t.Fatalf("merge --junit under --out: exit %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(out, "junit.xml")); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "out", "shard-1")
	if code, errs := runSuiteIn(t, dir, nil, "suite", file, "--list", "--results", results, "--junit", filepath.Join(results, "junit.xml")); code != 0 {
		t.Fatalf("suite --junit under --results: exit %d %s", code, errs)
	}
}

// --results naming a file, where a directory is wanted, is bad input (254) for suite, repro and compare,
// as it is for run.
func TestResultsFileIsBadInput(t *testing.T) {
	t.Parallel() // refused before any run starts
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"suite", writeSuite(t, "entries:\n  - name: a\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n"), "--results", file},
		{"repro", "kleppmann-pause", "--seeds", "1", "--results", file},
		{"compare", "--quick", "--seeds", "1", "--results", file},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, errs := runSuiteIn(t, t.TempDir(), nil, args...)
			wantSuiteLine(t, code, errs, "--results "+file)
		})
	}
}

// merge exits 254 with one line for a poisoned shard: a run dir out of the shard, a suite.json that is a
// symlink to /dev/zero, the same shard twice; nothing is merged.
func TestMergeHostileShards(t *testing.T) {
	t.Parallel() // no run starts
	base := t.TempDir()
	good := filepath.Join(base, "good")
	writeSuiteShard(t, filepath.Join(good, "shard-1"), "runs/c/r")
	outside := filepath.Join(base, "bad-dir")
	writeSuiteShard(t, filepath.Join(outside, "shard-1"), "../../good/shard-1/runs/c")
	zero := filepath.Join(base, "zero", "shard-1")
	if err := os.MkdirAll(zero, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(zero, "suite.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(good, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want string
		dirs       []string
	}{
		{"dir out of the shard", `dir "../../good/shard-1/runs/c" is not a directory under the shard's runs/`, []string{outside}},
		{"suite.json to /dev/zero", "suite.json", []string{filepath.Dir(zero)}},
		{"the same shard twice", "are the same directory: its runs would be counted twice", []string{good, filepath.Join(base, "link")}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m")
			code, errs := runSuiteIn(t, base, nil, append([]string{"merge", "--out", out}, c.dirs...)...)
			wantSuiteLine(t, code, errs, c.want)
			if _, err := os.Stat(out); err == nil {
				t.Error("--out was made for a refused merge")
			}
		})
	}
}

// writeSuiteShard writes a shard's suite.json naming run directories (made when under runs/) without
// running anything.
func writeSuiteShard(t *testing.T, dir string, dirs ...string) {
	t.Helper()
	var outs []map[string]any
	for i, d := range dirs {
		outs = append(outs, map[string]any{"id": "e/default/none/" + string(rune('1'+i)), "entry": "e", "seed": i + 1,
			"verdict": "invalid", "expect": []string{"invalid"}, "met": true, "dir": d})
		if strings.HasPrefix(d, "runs/") {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"name": "s", "started": time.Unix(1, 0), "outcomes": outs})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "suite.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// compare with one row twice is bad input, refused before any run: the two rows would share a directory.
func TestCompareRowTwice(t *testing.T) {
	t.Parallel()
	code, errs := runSuiteIn(t, t.TempDir(), nil, "compare", "--locks", "naive", "--client", "redsync", "--client", "redsync", "--seeds", "1")
	wantSuiteLine(t, code, errs, "given twice")
}
