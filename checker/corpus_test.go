package checker_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/corpus"
)

// Every recorded history in testdata/corpus gets the verdict its index names, decided (never unknown).
// The bound is generous for a loaded machine; `make bench` holds the hard ones to 10 s.
func TestCorpus(t *testing.T) {
	entries, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("empty corpus")
	}
	for _, e := range entries {
		t.Run(e.Name, func(t *testing.T) {
			res, took, err := e.Judge(context.Background(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.Valid != e.Want {
				t.Fatalf("%s: porcupine says %v (%s; %s), want %v", e.Name, res.Valid, res.Summary, res.Violation, e.Want)
			}
			t.Logf("%s: %v in %s", e.Name, res.Valid, took.Round(time.Millisecond))
		})
	}
}
