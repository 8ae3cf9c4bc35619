package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// gunzipTo writes the corpus history name, unzipped, into dir and returns its path.
func gunzipTo(t *testing.T, dir, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "checker", "testdata", "corpus", name+".jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history.jsonl")
	b, err := io.ReadAll(z)
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// `lockcheck check --proof` of a history that porcupine finds legal and mutual-exclusion does not (a paused
// holder outlived its lease): the proof is the overlap's two sections with their grants, listed in the
// results, and checked alone it is invalid.
func TestCheckProofOfAnOverlap(t *testing.T) {
	dir := t.TempDir()
	path := gunzipTo(t, dir, "reentrant-client-pause")
	proof := filepath.Join(dir, "proof.jsonl")
	if code := execute(context.Background(), []string{"check", path, "--proof", proof}); code != exitInvalid {
		t.Fatalf("exit %d, want %d", code, exitInvalid)
	}
	var res struct {
		Files map[string]string `json:"files"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "history.check.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || res.Files["proof"] != proof {
		t.Fatalf("the results name no proof (%v): %v", err, res.Files)
	}
	if code := execute(context.Background(), []string{"check", proof}); code != exitInvalid {
		t.Fatalf("lockcheck check proof.jsonl: exit %d, want %d", code, exitInvalid)
	}
}

// --proof never replaces a file lockcheck did not write, nor the history being checked: exit 254 and the
// file as it was.
func TestCheckProofRefusesOthersFiles(t *testing.T) {
	dir := t.TempDir()
	path := gunzipTo(t, dir, "reentrant-client-pause")
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
