package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// precious is a file outside everything lockcheck writes, which no command may change or remove.
func precious(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "precious")
	if err := os.WriteFile(file, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func wantPrecious(t *testing.T, file string) {
	t.Helper()
	if b, err := os.ReadFile(file); err != nil || string(b) != "precious\n" {
		t.Fatalf("%s, outside what lockcheck writes, was changed: %q %v", file, b, err)
	}
}

// With HOME unset, the worker cache is in the temporary directory, which every user may write in
// (issue #29, item 4). A cache another user made there, open to all, holding a build of the naive worker
// and a build log that links to a file of this user's, is refused before anything starts: one line, exit
// 254; the planted worker is not run, the linked file is not written.
func TestSharedTmpCacheRefused(t *testing.T) {
	t.Parallel() // nothing starts
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	_, victim := precious(t)
	ran := filepath.Join(t.TempDir(), "planted-ran")
	for _, cache := range []string{"lockcheck-cache", fmt.Sprintf("lockcheck-cache-%d", os.Geteuid())} { // before and after #29
		out := filepath.Join(tmp, cache, "workers", "naive", "1")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(tmp, cache), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "run"), []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, out+".build.log"); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=", "XDG_CACHE_HOME=", "LOCKCHECK_CACHE=", "TMPDIR=" + tmp}
	for _, args := range [][]string{
		{"workers", "build", "naive"},
		{"run", "--client", "naive", "--time", "2s", "--quiet", "500ms", "--results", filepath.Join(t.TempDir(), "r")},
	} {
		code, errs := runSuiteIn(t, t.TempDir(), env, args...)
		wantSuiteLine(t, code, errs, "worker cache "+tmp)
		if !strings.Contains(errs, "set LOCKCHECK_CACHE") {
			t.Errorf("%s: %q does not say what to do", args, errs)
		}
		wantPrecious(t, victim)
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%s: the planted worker ran", args)
		}
	}
}

// A suite's --results holding a runs link that another hand put there (a checkout, a shared directory) is
// refused before any run: one line, exit 254, and nothing is removed or written through the link (issue
// #29, item 5). merge --out the same.
func TestSuiteResultsRunsLinkRefused(t *testing.T) {
	t.Parallel() // the refusal comes before any run starts
	file := writeSuite(t, "name: s\nentries:\n  - name: e\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n")
	outside, victim := precious(t)
	// What a rerun would clear: the case's directory under runs/, here through the link.
	caseDir := filepath.Join(outside, "e_default_none_1")
	if err := os.MkdirAll(caseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	inCase := filepath.Join(caseDir, "precious")
	if err := os.WriteFile(inCase, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(results, "runs")); err != nil {
		t.Fatal(err)
	}
	code, errs := runSuiteIn(t, t.TempDir(), nil, "suite", file, "--results", results, "--keep", "all")
	wantPrecious(t, victim)
	wantPrecious(t, inCase)
	wantSuiteLine(t, code, errs, filepath.Join(results, "runs"))
	if ents, _ := os.ReadDir(outside); len(ents) != 2 {
		t.Fatalf("written through the link: %v", ents)
	}

	// merge --out with the same link: refused before anything is written.
	shard := filepath.Join(t.TempDir(), "shard")
	writeSuiteShard(t, shard, "runs/e_default_none_1")
	code, errs = runSuiteIn(t, t.TempDir(), nil, "merge", "--out", results, shard)
	wantPrecious(t, inCase)
	wantSuiteLine(t, code, errs, filepath.Join(results, "runs"))
	if ents, _ := os.ReadDir(outside); len(ents) != 2 {
		t.Fatalf("merge wrote through the link: %v", ents)
	}
}

// A --junit that is a link (a junit.xml a checkout carries in the results directory) is refused before
// the first run: the report would be written through it.
func TestJUnitLinkRefused(t *testing.T) {
	t.Parallel() // the refusal comes before any run starts
	file := writeSuite(t, "name: s\nentries:\n  - name: e\n    lock: reentrant\n    time: 2s\n    flags: {quiet: 500ms}\n")
	_, victim := precious(t)
	results := t.TempDir()
	junit := filepath.Join(results, "junit.xml")
	if err := os.Symlink(victim, junit); err != nil {
		t.Fatal(err)
	}
	code, errs := runSuiteIn(t, t.TempDir(), nil, "suite", file, "--results", results, "--junit", junit)
	wantSuiteLine(t, code, errs, "--junit "+junit)
	wantPrecious(t, victim)
}
