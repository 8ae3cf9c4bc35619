package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stalledHistory is a fair-lock run that asked for --check liveness: c2 freezes (client-stall) as it
// begins its unlock at 2 s, so its 1.5 s watchdog lease runs out by 4.5 s, yet c1, waiting since 1.5 s,
// is granted only at 12.1 s, when c2 wakes.
func stalledHistory(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"meta","time":1000000,"data":{"lock":"fair","topology":"single","nemesis":["client-stall"],"seed":1,` +
		`"options":{"timeout":"1s","watchdog":"1500ms","check":"liveness"},"checks":{"family":"mutex","fair":true,"liveness":true}}}` + "\n")
	calls := []struct {
		client, f string
		inv, done int64
		typ       string
	}{
		{"c2", "tryLock", 1000, 1100, "ok"},
		{"c1", "tryLock", 1500, 12100, "ok"},
		{"c2", "unlock", 2000, 12050, "fail"},
		{"c1", "unlock", 12300, 12350, "ok"},
	}
	for i, c := range calls {
		fmt.Fprintf(&b, `{"type":"invoke","time":%d,"id":%d,"client":"%s","thread":1,"key":"lock-0","owner":"%s:1","f":"%s","args":{"lease_ms":0,"nested":0,"wait_ms":30000}}`+"\n",
			c.inv*1e6, i+1, c.client, c.client, c.f)
		if i == 2 {
			b.WriteString(`{"type":"fault","time":2000000000,"client":"nemesis","f":"client-stall","phase":"start","targets":["c2"],"detail":"frozen"}` + "\n")
		}
	}
	for i, c := range calls {
		fmt.Fprintf(&b, `{"type":"%s","time":%d,"id":%d,"client":"%s","thread":1,"key":"lock-0","owner":"%s:1","f":"%s"}`+"\n",
			c.typ, c.done*1e6, i+1, c.client, c.client, c.f)
		if i == 0 {
			fmt.Fprintf(&b, `{"type":"cs","time":1900000000,"client":"c2","thread":1,"key":"lock-0","owner":"c2:1","enter":1100000000,"exit":1900000000}`+"\n")
		}
	}
	b.WriteString(`{"type":"fault","time":12000000000,"client":"nemesis","f":"client-stall","phase":"stop","targets":["c2"]}` + "\n")
	b.WriteString(`{"type":"cs","time":12250000000,"client":"c1","thread":1,"key":"lock-0","owner":"c1:1","enter":12100000000,"exit":12250000000}` + "\n")
	b.WriteString(`{"type":"fault","time":12400000000,"client":"nemesis","f":"heal","phase":"final","detail":"all healed"}` + "\n")
	b.WriteString(`{"type":"end","time":12500000000,"f":"completed"}` + "\n")
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lockcheck check runs the liveness checkers a run asked for: the slow waiter is invalid, with its span
// (from the lock's free moment to the grant) recorded for the page, which draws it as a band on every chart.
func TestLivenessCheckAndPage(t *testing.T) {
	t.Parallel() // check of a recorded history
	path := stalledHistory(t)
	if code := execute(context.Background(), []string{"check", path}); code != exitInvalid {
		t.Fatalf("exit %d, want %d", code, exitInvalid)
	}
	var res struct {
		Checkers []struct {
			Checker   string `json:"checker"`
			Valid     any    `json:"valid"`
			Violation string `json:"violation"`
			At        int64  `json:"violation_at_ns"`
			End       int64  `json:"violation_end_ns"`
			Stall     string `json:"stall"`
		} `json:"checkers"`
	}
	dir := filepath.Dir(path)
	b, err := os.ReadFile(filepath.Join(dir, "history.check.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range res.Checkers {
		switch c.Checker {
		case "slow-wakeup":
			found = true
			if c.Valid != false || c.At != 4517000000 || c.End != 12100000000 || c.Stall == "" ||
				!strings.Contains(c.Violation, "c2 froze at 2.000s") {
				t.Fatalf("slow-wakeup: %+v", c)
			}
		case "mutual-exclusion", "porcupine":
			if c.Valid != true {
				t.Errorf("%s: %v, %s (the stall left no overlap)", c.Checker, c.Valid, c.Violation)
			}
		}
	}
	if !found {
		t.Fatal("no slow-wakeup checker in the results: --check liveness was not honoured offline")
	}
	dom := browse(t, "file://"+filepath.Join(dir, "history.check.summary.html"), "summary-liveness.png")
	if attr(t, dom, "gantt", "data-rendered") != "true" || attr(t, dom, "gantt", "data-stalls") != "1" {
		t.Fatalf("the holder plot did not draw the slow waiter's band (stalls %q)", attr(t, dom, "gantt", "data-stalls"))
	}
}

// A healthy fair lock (the emulation wakes a waiter when a frozen holder's lease runs out) whose holder
// stalls at an unlock stays valid under --check liveness: no false slow wake-up or starvation, and the
// stall left nobody inside twice.
func TestLivenessHealthyFairLockAfterStall(t *testing.T) {
	// Sequential: a stall in seconds: slow-wakeup must stay valid.
	code, dir := run(t, "run", "--lock", "fair", "--check", "liveness", "--nemesis", "client-stall", "--nemesis-trigger",
		"--watchdog", "1500ms", "--timeout", "1s", "--wait", "30s", "--hold", "100ms-300ms", "--clients", "3",
		"--nemesis-duration", "6s", "--nemesis-interval", "2s", "--time", "10s", "--quiet", "1s", "--seed", "1")
	if code != exitValid {
		t.Fatalf("exit %d, want %d (%s)", code, exitValid, dir)
	}
	var res struct {
		Checkers []struct {
			Checker string `json:"checker"`
			Valid   any    `json:"valid"`
		} `json:"checkers"`
		Faults []struct{ Kind string } `json:"faults"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 1 || res.Faults[0].Kind != "client-stall" {
		t.Fatalf("faults %+v, want one client-stall", res.Faults)
	}
	judged := 0
	for _, c := range res.Checkers {
		if c.Checker == "slow-wakeup" || c.Checker == "starvation" {
			judged++
			if c.Valid != true {
				t.Errorf("%s: %v", c.Checker, c.Valid)
			}
		}
	}
	if judged != 2 {
		t.Fatalf("%d liveness checkers ran, want 2", judged)
	}
}
