package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// Two threads of one client are two owners: their overlap is a violation that names each thread.
func TestExclusionNamesThreads(t *testing.T) {
	sec := func(thread int64, owner string, enter, exit int64) history.Record {
		return history.Record{Type: history.Section, Client: "c1", Thread: thread, Owner: owner, Key: "k", Enter: enter, Exit: exit}
	}
	r := Exclusion{}.Check(context.Background(), &history.History{Sections: []history.Record{
		sec(1, "u:1", 0, 2e9), sec(2, "u:2", 1e9, 3e9)}})
	if r.Valid != Invalid || !strings.Contains(r.Violation, "c1/1 held k from 0.000s to 2.000s; c1/2 entered at 1.000s") {
		t.Fatalf("got %v %q", r.Valid, r.Violation)
	}
	r = Exclusion{Capacity: 1}.Check(context.Background(), &history.History{Sections: []history.Record{
		sec(1, "u:1", 0, 2e9), sec(2, "u:2", 1e9, 3e9)}})
	if r.Valid != Invalid || !strings.Contains(r.Violation, "c1/1, c1/2") {
		t.Fatalf("got %v %q", r.Valid, r.Violation)
	}
}
