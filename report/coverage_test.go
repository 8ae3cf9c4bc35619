package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
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
