package runner

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
)

// writeHistory writes a history of only a meta record, as a run of some lock would have begun it.
func writeHistory(t *testing.T, meta string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	rec, err := history.Create(path, history.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	rec.Write(history.Record{Type: history.Meta, Data: json.RawMessage(meta)})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkerNames(rs []checker.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Checker)
	}
	return out
}

// A history is judged by the family its meta record names, so a spec-defined kind, which is not registered
// here, is judged all the same (an unregistered lock that names no spec is refused); histories older than the checks fall back to the kind.
func TestAnalyzeJudgesByRecordedFamily(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		want       []string
	}{
		{"old meta, semaphore", `{"lock":"semaphore","topology":"single","checks":{"permits":2}}`,
			[]string{"porcupine", "mutual-exclusion", "permits-at-rest", "stats"}},
		{"old meta, redlock without members", `{"lock":"redlock","topology":"redlock","checks":{"family":"mutex"}}`,
			[]string{"porcupine", "mutual-exclusion", "told-of-loss", "stats"}},
		{"spec lock", `{"lock":"my-lua-rwlock","spec":"my.yaml","topology":"single","checks":{"family":"rwlock"}}`,
			[]string{"porcupine", "mutual-exclusion", "stats"}},
		{"fenced", `{"lock":"fenced","topology":"single","checks":{"family":"mutex","fenced":true}}`,
			[]string{"porcupine", "mutual-exclusion", "told-of-loss", "lost-lock", "fencing-tokens", "stats"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Analyze(writeHistory(t, tc.meta), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := checkerNames(res.Checkers); !slices.Equal(got, tc.want) {
				t.Fatalf("checkers %v, want %v", got, tc.want)
			}
		})
	}
	for _, meta := range []string{
		`{"lock":"x","topology":"single","checks":{"family":"queue"}}`,  // unknown family
		`{"lock":"x","topology":"single"}`,                              // old meta of an unknown lock
		`{"lock":"x","topology":"single","checks":{"family":"rwlock"}}`, // an unknown lock from nowhere
		`{"lock":"x","spec":"x.yaml","checks":{"family":"queue"}}`,      // a spec lock of an unknown family
	} {
		if _, err := Analyze(writeHistory(t, meta), time.Second); !IsUsage(err) {
			t.Errorf("%s: %v, want a usage error", meta, err)
		}
	}
}

func quickOptions(t *testing.T) Options {
	o := Defaults()
	o.Lock, o.Clients, o.Time, o.Quiet, o.Seed, o.Results = "reentrant", 2, 1500*time.Millisecond, 300*time.Millisecond, 1, t.TempDir()
	return o
}

// The test's client factory is the one seam every implementation plugs into: the run makes each client
// through it, and a factory wrapping the built-in one runs and judges as the built-in does.
func TestClientFactoryIsTheSeam(t *testing.T) {
	test, err := Prepare(quickOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var made atomic.Int32
	builtin := test.Clients.New
	test.Clients.New = func(e locks.Env) (locks.Client, error) {
		made.Add(1)
		return builtin(e)
	}
	res, err := test.Execute(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if made.Load() != 2 {
		t.Errorf("the factory made %d clients, want 2", made.Load())
	}
	if res.Valid != checker.Valid {
		t.Errorf("fault-free run through the seam: %v", res.Valid)
	}
}

// notAMutex is a client of no family at all, as a worker of the wrong kind would be.
type notAMutex struct{ closed *atomic.Bool }

func (notAMutex) Name() string      { return "c?" }
func (notAMutex) Gate() *locks.Gate { return nil }
func (c notAMutex) Close() error    { c.closed.Store(true); return nil }

// A client that does not implement its kind's family is refused with one clear error (a harness error),
// not a panic in the workload, and it is closed.
func TestWrongFamilyClientIsRefused(t *testing.T) {
	test, err := Prepare(quickOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var closed atomic.Bool
	test.Clients.New = func(locks.Env) (locks.Client, error) { return notAMutex{&closed}, nil }
	res, err := test.Execute(context.Background(), io.Discard)
	if err == nil || IsUsage(err) || !strings.Contains(err.Error(), "does not implement the mutex family") {
		t.Fatalf("err = %v, want a harness error naming the family", err)
	}
	if res != nil && res.Valid == checker.Valid {
		t.Errorf("a run whose clients were refused is valid")
	}
	if !closed.Load() {
		t.Error("the refused client was not closed")
	}
}
