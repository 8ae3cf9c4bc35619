package report

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testkit/histgen"
)

func op(client, node, f string, call, ret int64, outcome history.Type) history.Operation {
	inv := history.Record{Type: history.Invoke, Time: call, Client: client, Node: node, F: f}
	if outcome == "" { // never completed
		return history.OperationOf(inv, nil)
	}
	c := inv
	c.Type, c.Time = outcome, ret
	return history.OperationOf(inv, &c)
}

func fault(kind, phase string, at int64, targets ...string) history.Record {
	return history.Record{Type: history.Fault, Time: at, Client: "nemesis", F: kind, Phase: phase, Targets: targets}
}

// Each window counts what was in flight in its own scope: a link fault its client's operations, a node
// fault those sent to its node (or to an unnamed one), a failover every one.
func TestCoverageScopes(t *testing.T) {
	h := &history.History{
		Ops: []history.Operation{
			op("c1", "n1", "acquire", 10, 20, history.Ok),
			op("c2", "n1", "release", 15, 60, history.Unknown),
			op("c2", "n2", "acquire", 30, 40, history.Fail),
			op("c1", "", "release", 100, 110, history.Ok),
		},
		Faults: []history.Record{
			fault("drop-reply", "start", 12, "c2->n1"), fault("drop-reply", "stop", 50, "c2->n1"),
			fault("kill", "start", 25, "n2"), fault("kill", "stop", 35, "n2"),
			fault("failover", "start", 90, "shard:0", "keep:c1"), fault("failover", "stop", 120, "shard:0", "keep:c1"),
			fault("pause", "start", 200, "n1"), fault("pause", "stop", 300, "n1"),
		},
		Sections: []history.Record{{Type: history.Section, Client: "c1", Enter: 20, Exit: 95}},
	}
	cov := Coverage(h)
	want := []struct {
		inFlight, unknown map[string]int
		grants, releases  int
		holders           []string
		touched           bool
	}{
		{map[string]int{"release": 1}, map[string]int{"release": 1}, 0, 0, nil, true}, // c2's, not c1's
		{map[string]int{"acquire": 1}, map[string]int{}, 0, 0, []string{"c1"}, true},  // only the one sent to n2; a section names no node
		{map[string]int{"release": 1}, map[string]int{}, 0, 1, []string{"c1"}, true},  // every client
		{map[string]int{}, map[string]int{}, 0, 0, nil, false},                        // nothing at all
	}
	if len(cov) != len(want) {
		t.Fatalf("%d windows, want %d", len(cov), len(want))
	}
	for i, w := range want {
		c := cov[i]
		if !reflect.DeepEqual(c.InFlight, w.inFlight) || !reflect.DeepEqual(c.Unknown, w.unknown) ||
			c.Grants != w.grants || c.Releases != w.releases || !reflect.DeepEqual(c.Holders, w.holders) || c.Touched != w.touched {
			t.Errorf("window %d (%s): %+v, want %+v", i, c.Fault, c, w)
		}
	}
	if MissedAll(cov) {
		t.Fatal("some faults touched the lock, yet all are said to have missed")
	}

	r := &Results{Valid: checker.Valid}
	r.NoteCoverage(h)
	if r.MissedLock || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "pause n1") || !strings.Contains(r.Notes[0], "touched no lock operation") {
		t.Fatalf("missed %v, notes %q", r.MissedLock, r.Notes)
	}
}

// A valid run whose every fault touched nothing says so in its verdict; an invalid one is not reworded.
func TestValidButMissed(t *testing.T) {
	h := &history.History{
		Ops:    []history.Operation{op("c1", "n1", "acquire", 10, 20, history.Ok)},
		Faults: []history.Record{fault("kill", "start", 30, "n1"), fault("kill", "stop", 40, "n1")},
	}
	r := &Results{Valid: checker.Valid, Files: map[string]string{}}
	r.NoteCoverage(h)
	var out bytes.Buffer
	r.Table(&out)
	if !r.MissedLock || r.Verdict != MissedLock || !strings.Contains(out.String(), "VERDICT: VALID, but the faults missed the lock") {
		t.Fatalf("missed %v, verdict %q, table:\n%s", r.MissedLock, r.Verdict, out.String())
	}
	acq := &Results{Valid: checker.Valid}
	acq.NoteCoverage(&history.History{Ops: h.Ops,
		Faults: []history.Record{fault("drop-reply", "start", 5, "c1->n1"), fault("drop-reply", "stop", 40, "c1->n1")}})
	if acq.MissedLock || !strings.Contains(strings.Join(acq.Notes, "\n"), "no fault window had a release in flight") {
		t.Fatalf("a drop-reply that hit only an acquire: missed %v, notes %q", acq.MissedLock, acq.Notes)
	}
	bad := &Results{Valid: checker.Invalid}
	bad.NoteCoverage(h)
	if bad.MissedLock || bad.Verdict != "" {
		t.Fatalf("an invalid verdict reworded: %+v", bad)
	}
	none := &Results{Valid: checker.Valid}
	none.NoteCoverage(&history.History{Ops: h.Ops})
	if none.MissedLock {
		t.Fatal("a fault-free run is said to have missed")
	}
}

func opk(client, owner, key, f string, call, ret int64, outcome history.Type) history.Operation {
	inv := history.Record{Type: history.Invoke, Time: call, Client: client, Owner: owner, Key: key, F: f}
	c := inv
	c.Type, c.Time = outcome, ret
	return history.OperationOf(inv, &c)
}

// A client-pause fired by a grant (--nemesis-trigger) starts right after the grant and freezes its client
// before any critical section (an extending hold writes only after its first extend): the frozen holder
// counts, so a valid run is not said to have missed the lock.
func TestCoverageFrozenAtGrant(t *testing.T) {
	h := &history.History{
		Ops: []history.Operation{
			opk("c1", "c1/1", "lock-0", "acquire", 10, 20, history.Ok),
			opk("c1", "c1/1", "lock-0", "tryLock", 5, 21, history.Ok),
			opk("c1", "c1/1", "lock-0", "extend", 3100, 3110, history.Fail), // after the pause: lost
		},
		Faults: []history.Record{fault("client-pause", "start", 22, "c1"), fault("client-pause", "frozen", 23, "c1"),
			fault("client-pause", "stop", 3000, "c1")},
	}
	cov := Coverage(h)
	if len(cov) != 1 || !cov[0].Touched || !reflect.DeepEqual(cov[0].Holders, []string{"c1"}) || !reflect.DeepEqual(cov[0].Keys, []string{"lock-0"}) {
		t.Fatalf("coverage %+v", cov)
	}
	r := &Results{Valid: checker.Valid}
	r.NoteCoverage(h)
	if r.MissedLock {
		t.Fatalf("a pause that froze a holder at its grant is said to have missed the lock: %q", r.Verdict)
	}
	// Armed and never frozen (no grant while armed): the client ran as usual, nothing was tested.
	h.Faults = []history.Record{fault("client-pause", "start", 1, "c1"), fault("client-pause", "stop", 3000, "c1")}
	if cov := Coverage(h); cov[0].Touched || !strings.Contains(cov[0].Text(), "never froze") {
		t.Fatalf("a pause that never froze: %+v: %s", cov[0], cov[0].Text())
	}
}

// While a client-pause holds a holder frozen, the window counts what every owner did on the keys it held:
// others' grants there are what the pause tests. Keys are held owner by owner: the frozen client's second
// thread was only waiting for lock-1, so others' grants there do not count.
func TestCoveragePauseCountsOthersGrants(t *testing.T) {
	h := &history.History{
		Ops: []history.Operation{
			opk("c1", "c1/2", "lock-1", "acquire", 5, 8, history.Fail),
			opk("c1", "c1/1", "lock-0", "acquire", 10, 20, history.Ok),
			opk("c2", "c2/1", "lock-0", "acquire", 30, 1200, history.Ok), // the lease ran out under the frozen holder
			opk("c2", "c2/1", "lock-0", "release", 1300, 1310, history.Ok),
			opk("c3", "c3/1", "lock-0", "acquire", 1320, 1330, history.Ok),
			opk("c3", "c3/1", "lock-1", "acquire", 1400, 1410, history.Ok), // not a key the frozen client held
			opk("c3", "c3/1", "lock-0", "acquire", 4000, 4010, history.Ok), // after the pause
		},
		Faults: []history.Record{fault("client-pause", "start", 21, "c1"), fault("client-pause", "frozen", 22, "c1"),
			fault("client-pause", "stop", 3000, "c1")},
		Sections: []history.Record{{Type: history.Section, Client: "c1", Key: "lock-0", Enter: 22, Exit: 3050},
			{Type: history.Section, Client: "c2", Key: "lock-0", Enter: 1200, Exit: 1290}},
	}
	c := Coverage(h)[0]
	if c.Grants != 2 || c.Releases != 1 || c.InFlight["acquire"] != 2 || !reflect.DeepEqual(c.Holders, []string{"c1", "c2"}) {
		t.Fatalf("coverage %+v", c)
	}
	text := c.Text()
	if !strings.Contains(text, "froze c1 at a grant at 0.000s, holding lock-0") || !strings.Contains(text, "2 grants, 1 releases") ||
		strings.Contains(text, "in flight ;") {
		t.Fatalf("text %q", text)
	}
	// Nothing in flight is said so, not left blank.
	if text := (FaultCoverage{Fault: "kill", Targets: []string{"n1"}, Holders: []string{"c1"}, Touched: true}).Text(); !strings.Contains(text, "in flight none") {
		t.Fatalf("text %q", text)
	}
}

// Issue 36 item 4: Coverage's cost grows with the windows times what each reaches, not times the whole
// history: 35 000 client-pause windows over 200 000 operations are measured in well under the bound here.
// Before, each window scanned every operation, section and fault record (a loop of 1 ns faults wrote
// 640 000 windows, and neither its run's check nor `lockcheck check` ended in 240 s).
func TestCoverageOfManyWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if _, err := histgen.WriteFile(path, histgen.Spec{Ops: 200_000, Keys: 1, Seed: 1, Pauses: 1}); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []FaultCoverage, 1)
	go func() { done <- Coverage(h) }()
	select {
	case cov := <-done:
		pauses, frozen := 0, 0
		for _, c := range cov {
			if c.Fault == "client-pause" {
				pauses++
			}
			if len(c.Frozen) > 0 && c.Frozen[0] == "c1" {
				frozen++
			}
		}
		if pauses < 30_000 || frozen != pauses { // every pause froze c1
			t.Fatalf("%d pause windows, %d of them froze c1", pauses, frozen)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Coverage of 35 000 windows over 200 000 operations took over 30 s")
	}
}
