package suite

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

// FuzzParse: any suite file is either refused in one line, or parsed into at most MaxRuns runs, each
// with its own id and directory, under a name that is one path element.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"name: t\ndefaults: {lock: fair, seeds: 3}\nentries:\n  - name: e\n    topologies: [single, sentinel]\n    nemeses: [none, \"partition,kill\"]\n",
		"entries:\n  - name: a\n    seeds: [1, 1]\n",
		"entries:\n  - name: a\n    seeds: 2000000000\n",
		"name: ../../../escaped\nentries:\n  - name: a\n",
		"entries:\n  - {name: a, lock-spec: x.yaml, flags: {lease: 1s}, expect: [valid, unknown], time: 5s}\n",
		"repro: {issue: x, quick: true}\nentries:\n  - name: buggy\n  - name: fixed\n",
		"x: &a [1,2]\nentries: *a\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse("f.yaml", b, "/base")
		if err != nil {
			if strings.ContainsFunc(err.Error(), func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Fatalf("a control character in the error: %q", err)
			}
			return
		}
		if err := safefile.Name("name", s.Name); err != nil {
			t.Fatal(err)
		}
		if len(s.Cases) == 0 || len(s.Cases) > MaxRuns {
			t.Fatalf("%d runs", len(s.Cases))
		}
		ids, dirs := map[string]bool{}, map[string]bool{}
		for _, c := range s.Cases {
			d := runDirName(Outcome{Case: c, Round: 1})
			if ids[c.ID] || dirs[d] || len(d) > 255 || strings.Contains(d, "/") || d == "." || d == ".." {
				t.Fatalf("run %q: its id or directory %q again, or not a name", c.ID, d)
			}
			ids[c.ID], dirs[d] = true, true
		}
	})
}

// FuzzMerge: a shard of any suite.json (as a regular file, a symlink to /dev/zero or out of the shard, or
// a FIFO), beside a run directory of any results.json holding a private file and symlinks out, merges or
// is refused in one line; nothing outside --out changes, no outside text reaches --out, and no copy is
// more open than its source.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"name":"s","outcomes":[{"id":"e/d/n/1","dir":"runs/c/r","verdict":"invalid"}]}`), []byte(`{"valid":"invalid"}`), uint8(0))
	f.Add([]byte(`{"name":"s","outcomes":[{"id":"e/d/n/1","dir":"../outside"}]}`), []byte(`{}`), uint8(0))
	f.Add([]byte(`{"name":"s","outcomes":[{"id":"a","dir":"../.."},{"id":"b","dir":"runs/c/r"}]}`), []byte(`{}`), uint8(0))
	f.Add([]byte(`{"name":"s","outcomes":[{"id":"a","dir":"runs/out"},{"id":"a","dir":"runs/c"}]}`), []byte(``), uint8(0))
	f.Add([]byte(`{"name":"s","outcomes":[{"id":"a","dir":"runs/c"},{"id":"a","dir":"runs/c/r"}]}`), []byte(``), uint8(0))
	f.Add([]byte(`{"name":"x","outcomes":[]}`), []byte(`{}`), uint8(1))
	f.Add([]byte(`{"name":"x","outcomes":[]}`), []byte(`{}`), uint8(2))
	f.Add([]byte(`{"name":"x","outcomes":[]}`), []byte(`{}`), uint8(3))
	f.Fuzz(func(t *testing.T, suiteJSON, results []byte, kind uint8) {
		base := t.TempDir()
		outside := filepath.Join(base, "outside")
		mustWrite(t, filepath.Join(outside, "secret.txt"), "OUTSIDE-SECRET", 0o600)
		mustWrite(t, filepath.Join(outside, "suite.json"), string(suiteJSON), 0o644)
		shard := filepath.Join(base, "in", "shard")
		run := filepath.Join(shard, "runs", "c", "r")
		mustWrite(t, filepath.Join(run, "results.json"), string(results), 0o644)
		mustWrite(t, filepath.Join(run, "nodes", "redis.conf"), "requirepass x", 0o600)
		must(t, os.Chmod(filepath.Join(run, "nodes"), 0o700))
		must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(run, "leak.txt")))
		must(t, os.Symlink(outside, filepath.Join(shard, "runs", "out")))
		sj := filepath.Join(shard, "suite.json")
		switch kind % 4 {
		case 0:
			mustWrite(t, sj, string(suiteJSON), 0o644)
		case 1:
			must(t, os.Symlink("/dev/zero", sj))
		case 2:
			must(t, os.Symlink("../../outside/suite.json", sj))
		case 3:
			must(t, syscall.Mkfifo(sj, 0o644))
		}
		out := filepath.Join(base, "out")
		before := snapshot(t, base, out)
		_, err := Merge(out, []string{filepath.Join(base, "in")})
		if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
			t.Fatalf("error of more than one line: %q", err)
		}
		if after := snapshot(t, base, out); after != before {
			t.Fatalf("something outside --out changed:\n%s\n---\n%s", before, after)
		}
		if leaked := grepTree(t, out, "OUTSIDE-SECRET"); leaked != "" {
			t.Fatalf("%s holds an outside file's text", leaked)
		}
		filepath.WalkDir(out, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Name() == "redis.conf" {
				if fi, _ := e.Info(); fi.Mode().Perm()&0o077 != 0 {
					t.Fatalf("%s: mode %v, its source is 0600", p, fi.Mode())
				}
			}
			return nil
		})
	})
}

// snapshot lists every path under dir but skip, with its mode and a hash of a regular file's content.
func snapshot(t *testing.T, dir, skip string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p == skip {
			return fs.SkipDir
		}
		fi, _ := e.Info()
		b.WriteString(p + " " + fi.Mode().String())
		if e.Type().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", sha256.Sum256(c))
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}
