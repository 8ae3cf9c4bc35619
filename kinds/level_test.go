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

// levelHistory is a worker run: its own records are a legal sequence of two grants; its wire records
// (src wire) grant the lock to c2 while c1's lease still runs. event is the wire recorder's closing event
// ("" for none).
func levelHistory(t *testing.T, event string) *history.History {
	t.Helper()
	lines := []string{`{"type":"meta","time":0,"data":{"lock":"reentrant","topology":"single","checks":{"family":"mutex"}}}`}
	id := 0
	op := func(src, client, f string, call, ret int64, value int) {
		id++
		s := ""
		if src != "" {
			s = `"src":"` + src + `",`
		}
		lines = append(lines,
			fmt.Sprintf(`{"type":"invoke","time":%d,"id":%d,"client":"%s","thread":1,"key":"k","owner":"%s:1",%s"f":"%s","args":{"lease_ms":10000}}`,
				call, id, client, client, s, f),
			fmt.Sprintf(`{"type":"ok","time":%d,"id":%d,"client":"%s","thread":1,"key":"k","owner":"%s:1","f":"%s","value":%d}`,
				ret, id, client, client, f, value))
	}
	ms := int64(time.Millisecond)
	op("", "c1", "acquire", 1*ms, 2*ms, 0)
	op("wire", "c1", "acquire", 1*ms+1, 2*ms-1, 0)
	op("wire", "c2", "acquire", 3*ms, 4*ms, 0) // c1 holds it: illegal, if the wire records are judged
	op("", "c1", "release", 5*ms, 6*ms, 1)
	op("", "c2", "acquire", 7*ms, 8*ms, 0)
	if event != "" {
		lines = append(lines, `{"type":"event","time":9000000,"client":"wire","f":"`+event+`"}`)
	}
	h, err := history.Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Porcupine judges the wire records only when the wire recorder said they are complete; otherwise (the
// tap gave up on a connection, a script was unknown, the run died before its taps stopped) the client's
// own records, never a mix, and the result names the level.
func TestPorcupineJudgesCompleteWireRecords(t *testing.T) {
	for _, tc := range []struct {
		event string
		level string
		valid checker.Validity
	}{
		{history.WireComplete, "wire", checker.Invalid},
		{history.WireIncomplete, "client", checker.Valid},
		{"", "client", checker.Valid},
	} {
		h := levelHistory(t, tc.event)
		lin, cs := kinds.Mutex.Checkers(kinds.Checks{Family: "mutex"}, 10*time.Second)
		res := lin.Check(context.Background(), h)
		got := res.Details.(map[string]any)["records"]
		if res.Valid != tc.valid || got != tc.level || kinds.RecordLevel(h) != tc.level {
			t.Errorf("event %q: porcupine %v on %v records (%s), want %v on %s", tc.event, res.Valid, got, res.Summary, tc.valid, tc.level)
		}
		if wire := strings.HasSuffix(res.Summary, "(wire records)"); wire != (tc.level == "wire") {
			t.Errorf("event %q: summary %q", tc.event, res.Summary)
		}
		for _, c := range cs[1:] { // the promises and statistics see the client's records only
			if c.Name() == "stats" {
				if r := c.Check(context.Background(), h); !strings.HasPrefix(r.Summary, "3 operations") {
					t.Errorf("event %q: stats counted the wire records: %s", tc.event, r.Summary)
				}
			}
		}
	}
}
