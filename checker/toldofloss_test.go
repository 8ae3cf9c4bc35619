package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// lost is a lost event of c's thread 1 on lock-0 at ms.
func lost(c string, ms int64) history.Record {
	return history.Record{Type: history.Event, Time: ms * 1e6, Client: c, Thread: 1, Key: "lock-0", Owner: c + "-uuid:1", F: "lost"}
}

func TestToldOfLoss(t *testing.T) {
	ok, fail, unknown := history.Ok, history.Fail, history.Unknown
	lease := map[string]int64{"lease_ms": 300}
	// c1 holds from 0 ms; its 300 ms lease runs out (a pause); c2 is granted at 400 ms.
	held := []step{{"c1", "acquire", 0, 1, ok, 0, lease}, {"c2", "acquire", 400, 401, ok, 0, lease}}
	with := func(more ...step) []step { return append(append([]step(nil), held...), more...) }
	tests := []struct {
		name   string
		steps  []step
		events []history.Record
		want   Validity
		says   string
	}{
		{"a renewal refused after the other's grant: told", with(step{"c1", "renew", 500, 501, fail, 0, lease}), nil, Valid, ""},
		{"a release refused: told at the release", with(step{"c1", "release", 900, 901, fail, -1, nil}), nil, Valid, ""},
		{"a lost event before the next interaction: told", with(step{"c1", "release", 900, 901, ok, 1, nil}),
			[]history.Record{lost("c1", 450)}, Valid, ""},
		{"a lost event before the other's grant (the watchdog failed first): told", with(step{"c1", "renew", 900, 901, ok, 1, lease}),
			[]history.Record{lost("c1", 350)}, Valid, ""},
		{"a lost event of another thread does not tell this one", with(step{"c1", "renew", 900, 901, ok, 1, lease}),
			[]history.Record{lost("c3", 450)}, Invalid, "c1/1 was granted lock-0 at 0.001s"},
		{"renewed ok after another's grant: silent", with(step{"c1", "renew", 500, 501, ok, 1, lease}), nil, Invalid,
			"c2/1 was granted it at 0.401s; c1/1's next renewal or extend, answered at 0.501s, heard renewed (ok)"},
		{"nothing said until the release answered ok: silent", with(step{"c1", "release", 900, 901, ok, 1, nil}), nil, Invalid,
			"heard released (ok)"},
		{"a renewal before the other's grant was answered is not yet after the loss",
			with(step{"c1", "renew", 400, 402, ok, 1, lease}, step{"c1", "release", 900, 901, fail, -1, nil}), nil, Valid, ""},
		{"the holder released before the other's grant", []step{{"c1", "acquire", 0, 1, ok, 0, lease},
			{"c1", "release", 100, 101, ok, 1, nil}, {"c2", "acquire", 400, 401, ok, 0, lease}}, nil, Valid, ""},
		{"another's acquire of unknown outcome proves no loss", []step{{"c1", "acquire", 0, 1, ok, 0, lease},
			{"c2", "acquire", 400, 3400, unknown, 0, lease}, {"c1", "release", 3500, 3501, ok, 1, nil}}, nil, Valid, ""},
		{"another's refused acquire proves no loss", []step{{"c1", "acquire", 0, 1, ok, 0, lease},
			{"c2", "acquire", 400, 401, fail, 100, lease}, {"c1", "release", 500, 501, ok, 1, nil}}, nil, Valid, ""},
		{"a release of unknown outcome ends what is known", with(step{"c1", "release", 500, 3500, unknown, 0, nil},
			step{"c1", "release", 3600, 3601, ok, 1, nil}), nil, Valid, ""},
		{"an unacknowledged renewal claims nothing", with(step{"c1", "renew", 500, 501, ok, 1, map[string]int64{"lease_ms": 300, "nosync": 1}}),
			nil, Valid, ""},
		{"a re-entry after the loss took the lock afresh", with(step{"c2", "release", 450, 451, ok, 1, nil},
			step{"c1", "acquire", 500, 501, ok, 0, lease}, step{"c1", "release", 600, 601, ok, 1, nil}), nil, Valid, ""},
		{"a re-entry of unknown outcome may have taken it afresh: undecided", with(step{"c2", "release", 450, 451, ok, 1, nil},
			step{"c1", "acquire", 500, 3500, unknown, 0, lease}, step{"c1", "release", 3600, 3601, ok, 1, nil}), nil, Unknown,
			"may have taken the lock afresh"},
		{"a grant answered before the holder's own: granted over, not lost", []step{{"c1", "acquire", 0, 500, ok, 0, lease},
			{"c2", "acquire", 100, 400, ok, 0, lease}, {"c1", "release", 900, 901, ok, 1, nil}}, nil, Valid, ""},
		{"a waiter called before the holder's grant was answered, granted after: a loss", []step{{"c1", "acquire", 0, 100, ok, 0, lease},
			{"c2", "acquire", 50, 400, ok, 0, lease}, {"c1", "release", 900, 901, ok, 1, nil}}, nil, Invalid, "c2/1 was granted it at 0.400s"},
		{"grants whose order is unknown: undecided", []step{{"c1", "acquire", 0, 1000, ok, 0, lease},
			{"c2", "acquire", 100, 1200, ok, 0, lease}, {"c1", "release", 1500, 1501, ok, 1, nil}}, nil, Unknown, "which came first"},
		{"a grant answered while the holder's lease surely ran: granted twice, judged elsewhere", []step{{"c1", "acquire", 0, 1, ok, 0, lease},
			{"c2", "acquire", 100, 101, ok, 0, lease}, {"c1", "release", 900, 901, ok, 1, nil}}, nil, Valid, ""},
		{"an overlapping grant answered while the holder's lease surely ran came first", []step{{"c1", "acquire", 0, 100, ok, 0, lease},
			{"c2", "acquire", 50, 200, ok, 0, lease}, {"c1", "release", 900, 901, ok, 1, nil}}, nil, Valid, ""},
		{"only the first interaction after the loss counts", with(step{"c1", "renew", 500, 501, fail, 0, lease},
			step{"c1", "release", 900, 901, ok, 1, nil}), nil, Valid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ToldOfLoss{}.Check(context.Background(), &history.History{Ops: opsOf(tc.steps), Events: tc.events})
			if r.Valid != tc.want {
				t.Fatalf("got %s (%s: %s), want %s", r.Valid, r.Summary, r.Violation, tc.want)
			}
			if !strings.Contains(r.Violation, tc.says) {
				t.Fatalf("violation %q does not say %q", r.Violation, tc.says)
			}
		})
	}
}

// The wire's grants place a worker's grants in time: a waiter's grant whose order against the holder's the
// clients' intervals leave open is, on the wire, surely after the holder's.
func TestToldOfLossWireOrder(t *testing.T) {
	ok := history.Ok
	lease := map[string]int64{"lease_ms": 300}
	ops := opsOf([]step{{"c1", "acquire", 0, 1000, ok, 0, lease}, {"c2", "acquire", 100, 1200, ok, 0, lease},
		{"c1", "release", 1500, 1501, ok, 1, nil}})
	h := &history.History{Ops: ops}
	if r := (ToldOfLoss{}).Check(context.Background(), h); r.Valid != Unknown {
		t.Fatalf("without the wire: %s (%s), want unknown", r.Valid, r.Violation)
	}
	for i, w := range [][3]int64{{1, 500, 501}, {2, 1150, 1151}} { // c1's yes at 500 ms, c2's at 1150 ms
		inv := history.Record{Type: history.Invoke, ID: int64(100 + i), Time: w[1] * 1e6, Client: fmt.Sprintf("c%d", w[0]),
			Key: "lock-0", Owner: "token", Src: history.WireSrc, F: "acquire", Args: lease}
		done := inv
		done.Type, done.Time = history.Ok, w[2]*1e6
		h.Ops = append(h.Ops, history.OperationOf(inv, &done))
	}
	r := ToldOfLoss{}.Check(context.Background(), h)
	if r.Valid != Invalid || !strings.Contains(r.Violation, "c2/1 was granted it at 1.200s") {
		t.Fatalf("with the wire: %s (%s), want invalid", r.Valid, r.Violation)
	}
}
