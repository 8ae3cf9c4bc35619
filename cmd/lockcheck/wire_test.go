package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// porcupineOf reads porcupine's verdict and the level of records it judged ("wire" or "client") from a
// run's results.json.
func porcupineOf(t *testing.T, dir string) (valid any, records string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Checkers []struct {
			Checker string          `json:"checker"`
			Valid   any             `json:"valid"`
			Summary string          `json:"summary"`
			Details json.RawMessage `json:"details"` // each checker's own shape
		} `json:"checkers"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checkers {
		if c.Checker == "porcupine" {
			var d struct {
				Records string `json:"records"`
			}
			if err := json.Unmarshal(c.Details, &d); err != nil {
				t.Fatal(err)
			}
			if d.Records == "wire" && !strings.HasSuffix(c.Summary, "(wire records)") {
				t.Errorf("porcupine judged wire records but its summary does not say so: %q", c.Summary)
			}
			return c.Valid, d.Records
		}
	}
	t.Fatalf("no porcupine result in %s", dir)
	return nil, ""
}

// wireOf counts a run's wire records and returns the wire recorder's closing event (F and Detail).
func wireOf(t *testing.T, dir string) (records int, event history.Record) {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range h.Ops {
		if o.Invoke.Src == history.WireSrc {
			records++
		}
	}
	for _, e := range h.Events {
		if e.Client == history.WireClient {
			event = e
		}
	}
	return records, event
}

// A worker's lock commands are recorded from its links. The safe reference worker's SET NX PX and
// compare-and-delete scripts are all mapped, so porcupine judges the wire records, and finds them legal.
func TestWorkerWireRecordsJudged(t *testing.T) {
	t.Parallel() // a fault-free valid run
	useWorkerCache(t)
	code, dir := run(t, "run", "--client", "naive-safe", "--time", "3s", "--quiet", "1s", "--clients", "4", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	n, ev := wireOf(t, dir)
	if n == 0 || ev.F != history.WireComplete {
		t.Fatalf("%d wire records, closing event %q %q: want records and %s", n, ev.F, ev.Detail, history.WireComplete)
	}
	if valid, level := porcupineOf(t, dir); valid != true || level != "wire" {
		t.Fatalf("porcupine %v on %q records, want valid on wire records", valid, level)
	}
}

// The unsafe reference worker releases with a plain DEL, which names no owner and cannot be mapped: the
// wire history misses its releases, so it must not be judged (a missing release would make any run look
// illegal). Its acquires are still recorded, the closing event names the DELs, and porcupine judges the
// worker's own records, which it flags.
func TestWorkerWireIncompleteJudgesClientRecords(t *testing.T) {
	// Sequential: a 3 s negative control (naive) must be flagged.
	useWorkerCache(t)
	code, dir := run(t, "run", "--client", "naive", "--time", "3s", "--quiet", "1s", "--clients", "4", "--seed", "1")
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (%s)", code, exitInvalid, dir)
	}
	n, ev := wireOf(t, dir)
	if n == 0 || ev.F != history.WireIncomplete || !strings.Contains(ev.Detail, "DEL") {
		t.Fatalf("%d wire records, closing event %q %q: want records and %s naming DEL", n, ev.F, ev.Detail, history.WireIncomplete)
	}
	if valid, level := porcupineOf(t, dir); valid != false || level != "client" {
		t.Fatalf("porcupine %v on %q records, want invalid on the client's records", valid, level)
	}
}

// The real Redisson's RLock, watchdog included, is judged on what it sent: every script it sends for
// the lock is mapped, so porcupine judges the wire records of a fault-free run, and finds them legal.
func TestRedissonWireRecordsJudged(t *testing.T) {
	t.Parallel() // a fault-free valid run
	needJava(t)
	useWorkerCache(t)
	code, dir := run(t, "run", "--client", "redisson", "--lock", "reentrant", "--time", "6s", "--quiet", "1s",
		"--clients", "4", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	n, ev := wireOf(t, dir)
	if n == 0 || ev.F != history.WireComplete {
		t.Fatalf("%d wire records, closing event %q %q: want records and %s", n, ev.F, ev.Detail, history.WireComplete)
	}
	if valid, level := porcupineOf(t, dir); valid != true || level != "wire" {
		t.Fatalf("porcupine %v on %q records, want valid on wire records", valid, level)
	}
}
