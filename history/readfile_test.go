package history_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

// ReadFile, which counts the operations and sections first to allocate them once, reads what Read
// (no counts) reads from the same file, and its counts were exact.
func TestReadFileMatchesRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if _, err := histgen.WriteFile(path, histgen.Spec{Ops: 3000, Keys: 7, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	counted, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	streamed, err := history.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(counted.Sections) == 0 || len(counted.Ops) < 3000 {
		t.Fatalf("%d operations, %d sections", len(counted.Ops), len(counted.Sections))
	}
	if !reflect.DeepEqual(counted, streamed) {
		t.Fatal("ReadFile and Read differ")
	}
	if cap(counted.Ops) != len(counted.Ops) || cap(counted.Sections) != len(counted.Sections) {
		t.Fatalf("counts not exact: ops %d/%d, sections %d/%d", len(counted.Ops), cap(counted.Ops),
			len(counted.Sections), cap(counted.Sections))
	}
}
