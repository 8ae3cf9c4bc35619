package kinds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/kinds"
)

// mixedHistory builds a differential run's history (--client W,go): c1 a worker whose links were tapped,
// c2 a Go client. ops are "src client owner f call_ms ret_ms value"; event is the wire recorder's closing
// event, naming c1 as the only client tapped.
func mixedHistory(t *testing.T, event string, ops ...string) *history.History {
	t.Helper()
	lines := []string{`{"type":"meta","time":0,"data":{"lock":"reentrant","topology":"single","checks":{"family":"mutex"}}}`}
	for i, o := range ops {
		var src, client, owner, f string
		var call, ret, value int64
		if _, err := fmt.Sscan(o, &src, &client, &owner, &f, &call, &ret, &value); err != nil {
			t.Fatal(o, err)
		}
		s := ""
		if src != "-" {
			s = `"src":"` + src + `",`
		}
		ms := int64(time.Millisecond)
		lines = append(lines,
			fmt.Sprintf(`{"type":"invoke","time":%d,"id":%d,"client":"%s","thread":1,"key":"k","owner":"%s",%s"f":"%s","args":{"lease_ms":10000}}`,
				call*ms, i+1, client, owner, s, f),
			fmt.Sprintf(`{"type":"ok","time":%d,"id":%d,"client":"%s","thread":1,"key":"k","owner":"%s","f":"%s","value":%d}`,
				ret*ms, i+1, client, owner, f, value))
	}
	lines = append(lines, `{"type":"event","time":90000000,"client":"wire","f":"`+event+`","targets":["c1"]}`)
	h, err := history.Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func porcupine(t *testing.T, h *history.History) (checker.Validity, any, any) {
	t.Helper()
	lin, _ := kinds.Mutex.Checkers(kinds.Checks{Family: "mutex"}, 10*time.Second)
	res := lin.Check(context.Background(), h)
	d := res.Details.(map[string]any)
	return res.Valid, d["records"], d["operations"]
}

// A mixed run's porcupine input is the worker's wire records and the Go client's own command records:
// the worker's wire grant and the Go client's grant of the same lock while it is held conflict only when
// both are judged.
func TestMixedRunJudgesBothSides(t *testing.T) {
	h := mixedHistory(t, history.WireComplete,
		"wire c1 uuid-a:1 acquire 1 2 0",
		"- c2 uuid-b:1 acquire 3 4 0") // c1 still holds it
	valid, level, n := porcupine(t, h)
	if valid != checker.Invalid || level != "wire+client" || n != 2 {
		t.Fatalf("porcupine %v on %v records, %v operations: want invalid on wire+client records, 2 operations", valid, level, n)
	}
	if kinds.RecordLevel(h) != "wire+client" {
		t.Fatalf("level %q", kinds.RecordLevel(h))
	}
}

// The worker's own API records are not judged beside its wire records: they name their owners
// differently (c1:1, where the wire says Redisson's uuid:1), so judging both would see two owners holding.
func TestMixedRunSkipsTheWorkersAPIRecords(t *testing.T) {
	h := mixedHistory(t, history.WireComplete,
		"- c1 c1:1 acquire 1 3 0",
		"wire c1 uuid-a:1 acquire 1 2 0",
		"wire c1 uuid-a:1 release 4 5 1",
		"- c1 c1:1 release 4 6 1",
		"- c2 uuid-b:1 acquire 7 8 0")
	if valid, level, n := porcupine(t, h); valid != checker.Valid || level != "wire+client" || n != 3 {
		t.Fatalf("porcupine %v on %v records, %v operations: want valid on wire+client records, 3 operations", valid, level, n)
	}
}

// With an incomplete wire history a worker's count calls (lcp_*) are invisible to the models, so the
// Go client's commands on that key are only part of what changed it: a release that follows the worker's
// unseen grant must not be judged on its own.
func TestMixedRunLeavesOutKeysChangedUnseen(t *testing.T) {
	h := mixedHistory(t, history.WireIncomplete,
		"- c1 c1:1 lcp_release_permits 1 2 0",
		"- c2 uuid-b:1 release 3 4 1") // releases what c1's unseen call made: illegal on its own
	if valid, level, n := porcupine(t, h); valid != checker.Valid || level != "client" || n != 0 {
		t.Fatalf("porcupine %v on %v records, %v operations: want valid on client records, 0 operations", valid, level, n)
	}
}
