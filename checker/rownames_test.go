package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// porcupine's timeline names its rows after the client threads (c3/2, "c1 watchdog"), not 0..n-1.
func TestTimelineRowsAreNamed(t *testing.T) {
	var ops []history.Operation
	add := func(id int64, client string, thread int64, f string, call, ret int64) {
		inv := history.Record{Type: history.Invoke, ID: id, Time: call, Client: client, Thread: thread, Key: "lock-0",
			Owner: client + "-uuid:1", F: f, Args: map[string]int64{"lease_ms": 30000}}
		done := inv
		done.Type, done.Time = history.Ok, ret
		if f == "renew" {
			done.Value = history.Int64(1)
		}
		ops = append(ops, history.OperationOf(inv, &done))
	}
	add(1, "c1", 1, "acquire", 0, 10)
	add(2, "c1", 0, "renew", 20, 30)
	add(3, "c1", 1, "release", 40, 50)
	add(4, "c3", 2, "acquire", 60, 70)
	h := &history.History{Ops: ops}
	lin := &Linearizable{Label: "porcupine", Model: MutexModel, Convert: MutexOps, Timeout: 0}
	lin.Check(context.Background(), h)
	var out strings.Builder
	if err := lin.Visualize(&out, h, nil); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if want := `const lockcheckRows = ["c1/1","c1 watchdog","c3/2"]`; !strings.Contains(page, want) {
		i := strings.Index(page, "const lockcheckRows")
		t.Fatalf("the timeline does not name its rows: no %s in %.80q", want, page[max(i, 0):])
	}
	if n := strings.Count(page, "lockcheckRows[i] ??"); n != 2 {
		t.Fatalf("%d of porcupine's 2 row labels use the names", n)
	}
}
