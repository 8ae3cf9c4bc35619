package checker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func sec(client, key string, enter, exit int64) history.Record {
	return history.Record{Type: history.Section, Client: client, Owner: client + ":1", Key: key, Enter: enter, Exit: exit}
}

func TestExclusion(t *testing.T) {
	s := 1_000_000_000 // nanoseconds in a second
	tests := []struct {
		name     string
		sections []history.Record
		want     Validity
		says     string
	}{
		{"back to back", []history.Record{sec("c1", "k", 0, 10), sec("c2", "k", 10, 20)}, Valid, ""},
		{"other keys overlap freely", []history.Record{sec("c1", "a", 0, 10), sec("c2", "b", 5, 15)}, Valid, ""},
		{"overlap", []history.Record{sec("c1", "k", 0, int64(2*s)), sec("c2", "k", int64(s), int64(3*s))}, Invalid,
			"c1 held k from 0.000s to 2.000s; c2 entered at 1.000s: both inside for 1.000s"},
		{"nested inside a long one", []history.Record{sec("c1", "k", 0, 100), sec("c2", "k", 20, 30), sec("c3", "k", 50, 60)}, Invalid, "c2 entered"},
		{"no sections", nil, Unknown, "never tested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Exclusion{}.Check(context.Background(), &history.History{Sections: tc.sections})
			if r.Valid != tc.want || !strings.Contains(r.Violation+r.Summary, tc.says) {
				t.Fatalf("got %v %q %q", r.Valid, r.Summary, r.Violation)
			}
		})
	}
	if n := len(Overlaps([]history.Record{sec("c1", "k", 0, 100), sec("c2", "k", 20, 30), sec("c3", "k", 50, 60)})); n != 2 {
		t.Fatalf("%d overlaps, want 2 (c2 and c3 each inside c1)", n)
	}
}

// The porcupine checker turns recorded operations into a verdict and names the first command no legal
// order can place.
func TestLinearizableExplainsViolation(t *testing.T) {
	var ops []history.Operation
	add := func(id int64, client string, f string, call, ret int64, typ history.Type, value *int64) {
		inv := history.Record{Type: history.Invoke, ID: id, Time: call, Client: client, Thread: 1, Key: "lock-0",
			Owner: client + "-uuid:1", F: f, Args: map[string]int64{"lease_ms": 30000}}
		done := inv
		done.Type, done.Time, done.Value = typ, ret, value
		ops = append(ops, history.OperationOf(inv, &done))
	}
	add(1, "c1", "acquire", 0, 10, history.Ok, nil)
	add(2, "c2", "acquire", 20, 30, history.Ok, nil)
	lin := &Linearizable{Label: "porcupine", Model: MutexModel, Convert: MutexOps, Timeout: 0}
	r := lin.Check(context.Background(), &history.History{Ops: ops})
	if r.Valid != Invalid {
		t.Fatalf("verdict %v", r.Valid)
	}
	for _, want := range []string{"key lock-0", "c2/1 acquire → ok", "held by c1/1"} {
		if !strings.Contains(r.Violation, want) {
			t.Fatalf("violation %q lacks %q", r.Violation, want)
		}
	}
	var html strings.Builder
	if err := lin.Visualize(&html, &history.History{Ops: ops}, []Annotation{{Tag: "nemesis", Start: 5, End: 25, Description: "partition"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "partition") {
		t.Fatal("the annotation is not in the HTML")
	}
}

// A history without a section whose every acquire failed with an error says so, quoting the worker's
// error; one where an acquire was refused as held, or never answered, does not.
func TestEveryAcquireRefused(t *testing.T) {
	try := func(t history.Type, err string) history.Operation {
		return history.Operation{Invoke: history.Call{F: "tryLock", Args: map[string]int64{"lease_ms": 1500}},
			Complete: &history.Result{Type: t, Error: err}}
	}
	lease := func(ms int) string { return fmt.Sprintf("worker c1: error 10: leases are whole seconds, not %dms", ms) }
	for _, tc := range []struct {
		name string
		ops  []history.Operation
		want string
	}{
		{"all refused", []history.Operation{try(history.Fail, lease(1500)), try(history.Fail, lease(1500))},
			"every acquire was refused (2): error 10 'leases are whole seconds, not 1500ms'"},
		{"texts differ", []history.Operation{try(history.Fail, lease(1500)), try(history.Fail, lease(2500))},
			"every acquire was refused (2): error 10 'leases are whole seconds, not 1500ms', and 1 other error texts"},
		{"not a worker's", []history.Operation{try(history.Fail, "dial tcp: refused")}, "every acquire was refused (1): 'dial tcp: refused'"},
		{"one refused as held", []history.Operation{try(history.Fail, lease(1500)), try(history.Fail, "")}, ""},
		{"one unknown", []history.Operation{try(history.Fail, lease(1500)), try(history.Unknown, "timeout")}, ""},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history.History{Ops: tc.ops}
			if got := EveryAcquireRefused(h); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if r := (Exclusion{}).Check(context.Background(), h); tc.want != "" && r.Summary != "no critical section completed: "+tc.want {
				t.Fatalf("exclusion says %q", r.Summary)
			}
		})
	}
}
