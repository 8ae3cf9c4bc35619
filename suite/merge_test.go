package suite

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeShard makes a shard's suite directory as Run leaves it: suite.json with one outcome per dir, each
// kept run directory holding a results.json.
func writeShard(t *testing.T, dir string, dirs ...string) {
	t.Helper()
	r := Report{Name: "s", Started: time.Unix(1, 0)}
	for i, d := range dirs {
		r.Outcomes = append(r.Outcomes, Outcome{Case: Case{ID: "e/default/none/" + string(rune('1'+i)), Entry: "e", Seed: int64(i + 1)}, Verdict: "invalid", Dir: d})
		if strings.HasPrefix(d, "runs/") {
			mustWrite(t, filepath.Join(dir, d, "results.json"), "{}", 0o644)
		}
	}
	b, _ := json.Marshal(r)
	mustWrite(t, filepath.Join(dir, "suite.json"), string(b), 0o644)
}

func mustWrite(t *testing.T, p, text string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
}

func modeOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A merged store keeps each copied file's and directory's mode, or narrows it, never widens it: a 0700
// directory stays 0700 and the 0600 redis.conf in it 0600, so serving the merged store shows no secret a
// run kept private.
func TestMergeKeepsModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	shard := filepath.Join(t.TempDir(), "shard-1")
	run := filepath.Join(shard, "runs", "e_default_none_1", "20250101T000000.000-reentrant-none")
	writeShard(t, shard, "runs/e_default_none_1/20250101T000000.000-reentrant-none")
	mustWrite(t, filepath.Join(run, "nodes", "n1", "redis.conf"), "requirepass s3cret\n", 0o600)
	mustWrite(t, filepath.Join(run, "history.jsonl"), "{}\n", 0o644)
	mustWrite(t, filepath.Join(run, "clockshift.sh"), "#!/bin/sh\n", 0o755)
	mustWrite(t, filepath.Join(run, "open.txt"), "x\n", 0o666)
	for d, m := range map[string]fs.FileMode{filepath.Join(run, "nodes"): 0o700, filepath.Join(run, "nodes", "n1"): 0o750, filepath.Dir(run): 0o711} {
		if err := os.Chmod(d, m); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := Merge(out, []string{shard}); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(out, "runs", "e_default_none_1", "20250101T000000.000-reentrant-none")
	for p, want := range map[string]fs.FileMode{
		"nodes": 0o700, "nodes/n1": 0o750, "nodes/n1/redis.conf": 0o600, "history.jsonl": 0o644,
		"clockshift.sh": 0o755, "open.txt": 0o644, "..": 0o711, ".": 0o755,
	} {
		if m := modeOf(t, filepath.Join(got, p)); m != want {
			t.Errorf("%s: mode %v, want %v", p, m, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(got, "nodes", "n1", "redis.conf")); string(b) != "requirepass s3cret\n" {
		t.Errorf("redis.conf copied as %q", b)
	}
}

// Nothing a shard says leads merge out of it: a dir of "../outside", "../..", an absolute path or a
// symlink out is refused in one line before anything is written (out is not even made), and nothing
// outside is read or changed. A suite.json that is a symlink to /dev/zero, out of its directory, or a
// FIFO, is refused at once; a symlink inside a run directory is not followed.
func TestMergeConfinesShards(t *testing.T) {
	base := t.TempDir()
	mustWrite(t, filepath.Join(base, "outside", "secret.txt"), "OUTSIDE-SECRET", 0o600)
	mustWrite(t, filepath.Join(base, "outside", "suite.json"), `{"name":"x","outcomes":[]}`, 0o644)
	mustWrite(t, filepath.Join(base, "victim.txt"), "untouched", 0o644)
	for _, c := range []struct {
		name  string
		make  func(shard string)
		want  string
		fails bool
	}{
		{"dir up and out", func(s string) { writeShard(t, s, "../outside") }, `dir "../outside" is not a directory under the shard's runs/`, true},
		{"dir up twice", func(s string) { writeShard(t, s, "../..") }, `dir "../.." is not a directory under the shard's runs/`, true},
		{"dir through runs", func(s string) { writeShard(t, s, "runs/../../outside") }, `is not a directory under the shard's runs/`, true},
		{"absolute dir", func(s string) { writeShard(t, s, filepath.Join(base, "outside")) }, "is not a directory under the shard's runs/", true},
		{"the shard itself", func(s string) { writeShard(t, s, ".") }, "is not a directory under the shard's runs/", true},
		{"a dir twice", func(s string) { writeShard(t, s, "runs/c/r", "runs/c/r") }, `dir "runs/c/r" is another run's too`, true},
		{"a dir inside another", func(s string) { writeShard(t, s, "runs/c/r", "runs/c") }, `dir "runs/c" is another run's too`, true},
		{"symlinked run dir", func(s string) {
			writeShard(t, s, "runs/link")
			must(t, os.RemoveAll(filepath.Join(s, "runs", "link")))
			must(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(s, "runs", "link")))
		}, `dir "runs/link": runs/link is not a directory (a symlink, not followed)`, true},
		{"symlinked run dir inside", func(s string) {
			writeShard(t, s, "runs/c/r", "runs/d/r")
			must(t, os.RemoveAll(filepath.Join(s, "runs", "d")))
			must(t, os.Symlink("c", filepath.Join(s, "runs", "d")))
		}, `dir "runs/d/r": runs/d is not a directory (a symlink, not followed)`, true},
		{"suite.json to /dev/zero", func(s string) {
			os.MkdirAll(s, 0o755)
			must(t, os.Symlink("/dev/zero", filepath.Join(s, "suite.json")))
		}, "suite.json", true},
		{"suite.json out of its directory", func(s string) {
			os.MkdirAll(s, 0o755)
			must(t, os.Symlink("../../outside/suite.json", filepath.Join(s, "suite.json")))
		}, "path escapes", true},
		{"suite.json a FIFO", func(s string) {
			os.MkdirAll(s, 0o755)
			must(t, syscall.Mkfifo(filepath.Join(s, "suite.json"), 0o644))
		}, "not a regular file (a FIFO)", true},
		{"big suite.json", func(s string) {
			mustWrite(t, filepath.Join(s, "suite.json"), strings.Repeat(" ", 16<<20+1), 0o644)
		}, "more than the 16 MiB", true},
		{"symlink inside a run", func(s string) {
			writeShard(t, s, "runs/c/r")
			must(t, os.Symlink(filepath.Join(base, "outside", "secret.txt"), filepath.Join(s, "runs", "c", "r", "secret.txt")))
			must(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(s, "runs", "c", "r", "outdir")))
		}, "", false},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			in := filepath.Join(base, "in-"+strings.ReplaceAll(c.name, " ", "-"))
			c.make(filepath.Join(in, "shard"))
			out := filepath.Join(base, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			done := make(chan error, 1)
			go func() { _, err := Merge(out, []string{in}); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("merge still running after 20s")
			}
			if c.fails {
				if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("got %v; want one line with %q", err, c.want)
				}
				if _, serr := os.Stat(out); serr == nil {
					t.Errorf("out was made for a refused merge")
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(base, "victim.txt")); string(b) != "untouched" {
				t.Fatalf("a file outside --out was changed: %q", b)
			}
			if leaked := grepTree(t, out, "OUTSIDE-SECRET"); leaked != "" {
				t.Fatalf("%s holds an outside file's text", leaked)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// grepTree names a regular file under dir (symlinks not followed) holding text, or "".
func grepTree(t *testing.T, dir, text string) string {
	t.Helper()
	found := ""
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(text)) {
				found = p
			}
		}
		return nil
	})
	return found
}

// The same shard given twice, however spelled (a symlink, a path through ..), or a shard given beside
// the directory that holds it, is refused: its runs would be counted twice.
func TestMergeSameInputTwice(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "a")
	writeShard(t, filepath.Join(a, "shard-1"), "runs/c/r")
	must(t, os.Symlink(a, filepath.Join(base, "link")))
	for name, dirs := range map[string][]string{
		"twice":           {a, a},
		"through symlink": {a, filepath.Join(base, "link")},
		"spelled apart":   {a, filepath.Join(base, "a", "..", "a") + "/"},
		"inside":          {a, filepath.Join(a, "shard-1")},
		"holding":         {filepath.Join(a, "shard-1"), a},
	} {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m")
			r, err := Merge(out, dirs)
			if err == nil || !strings.Contains(err.Error(), "counted twice") {
				n := 0
				if r != nil {
					n = len(r.Outcomes)
				}
				t.Fatalf("got %v (%d runs); want a refusal: its runs would be counted twice", err, n)
			}
		})
	}
	r, err := Merge(filepath.Join(base, "m"), []string{a})
	if err != nil || len(r.Outcomes) != 1 {
		t.Fatalf("one shard: %v", err)
	}
}
