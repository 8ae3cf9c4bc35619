package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/testkit/corpus"
)

// corpusHistoryIn writes the corpus history name into dir, as history.Write writes it, and returns its path.
func corpusHistoryIn(t *testing.T, dir, name string) string {
	t.Helper()
	h, err := corpus.Entry{Name: name}.History()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err == nil {
		err = h.Write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// `lockcheck check --proof` of histories that porcupine finds legal and an interval checker does not: a
// paused holder outlived its lease (mutual-exclusion: the overlap's two sections with their grants), and an
// acknowledged lock gone after a lagging failover (lost-lock: the grant and the refusal). The proof is
// listed in the results, names its checker, and checked alone it is invalid.
func TestCheckProofOfIntervalCheckers(t *testing.T) {
	for _, c := range []struct{ history, checker string }{
		{"reentrant-client-pause", "mutual-exclusion"},
		{"reentrant-lagging-failover-seed6", "lost-lock"},
	} {
		t.Run(c.history, func(t *testing.T) {
			dir := t.TempDir()
			path := corpusHistoryIn(t, dir, c.history)
			proof := filepath.Join(dir, "proof.jsonl")
			if code := execute(context.Background(), []string{"check", path, "--proof", proof}); code != exitInvalid {
				t.Fatalf("exit %d, want %d", code, exitInvalid)
			}
			var res struct {
				Files map[string]string `json:"files"`
				Notes []string          `json:"notes"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "history.check.json"))
			if err == nil {
				err = json.Unmarshal(b, &res)
			}
			if err != nil || res.Files["proof"] != proof {
				t.Fatalf("the results name no proof (%v): %v", err, res.Files)
			}
			if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "the proof ("+c.checker+")") }) {
				t.Fatalf("no note of %s's proof: %q", c.checker, res.Notes)
			}
			if code := execute(context.Background(), []string{"check", proof}); code != exitInvalid {
				t.Fatalf("lockcheck check proof.jsonl: exit %d, want %d", code, exitInvalid)
			}
		})
	}
}

// --proof never replaces a file lockcheck did not write, nor the history being checked: exit 254 and the
// file as it was.
func TestCheckProofRefusesOthersFiles(t *testing.T) {
	dir := t.TempDir()
	path := corpusHistoryIn(t, dir, "reentrant-client-pause")
	notes := filepath.Join(dir, "notes.jsonl")
	if err := os.WriteFile(notes, []byte("{\"mine\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{notes, path} {
		before, _ := os.ReadFile(target)
		if code := execute(context.Background(), []string{"check", path, "--proof", target}); code != exitUsage {
			t.Errorf("--proof %s: exit %d, want %d", filepath.Base(target), code, exitUsage)
		}
		if after, _ := os.ReadFile(target); string(after) != string(before) {
			t.Errorf("--proof %s changed the file", filepath.Base(target))
		}
	}
}
