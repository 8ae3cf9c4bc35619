package worker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Events written before Open are held (up to EventsHeld, the rest refused) and written by Open in their
// order, after whatever was written in between (the meta record); later ones are written at once.
func TestEventsHeldUntilOpen(t *testing.T) {
	var out bytes.Buffer
	rec := history.NewRecorder(&out, history.NewClock())
	e := NewEvents(rec)
	for i := range EventsHeld {
		if !e.write(rec, history.Record{Type: history.Event, Time: int64(i + 1), F: "early"}) {
			t.Fatalf("event %d refused", i)
		}
	}
	if e.write(rec, history.Record{Type: history.Event, F: "early"}) {
		t.Fatalf("event %d held", EventsHeld+1)
	}
	if out.Len() != 0 {
		t.Fatalf("written before the meta record:\n%.300s", out.String())
	}
	rec.Write(history.Record{Type: history.Meta, Time: EventsHeld + 2, Data: []byte(`{"lock":"naive"}`)})
	e.Open()
	e.write(rec, history.Record{Type: history.Event, Time: EventsHeld + 3, F: "late"})
	h, err := history.Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Events) != EventsHeld+1 || h.Events[0].F != "early" || h.Events[EventsHeld].F != "late" {
		t.Fatalf("%d events, want the %d held, then the late one", len(h.Events), EventsHeld)
	}
}

// A client's budget allows EventBurst events at once, then EventRate a second; the record of what it
// dropped counts each name (a worker's names beyond 16 as "other").
func TestEventBudget(t *testing.T) {
	b := newEventBudget()
	now := time.Unix(1000, 0)
	for i := range EventBurst {
		if !b.take(now, "renewed") {
			t.Fatalf("event %d of the burst dropped", i)
		}
	}
	if b.take(now, "renewed") {
		t.Fatal("an event over the burst taken")
	}
	if !b.take(now.Add(time.Second/EventRate), "renewed") || b.take(now.Add(time.Second/EventRate), "renewed") {
		t.Fatal("not one event after 1/EventRate s")
	}
	for i := range 20 {
		b.drop(strings.Repeat("x", i+1))
	}
	r, ok := b.record("c1", 5)
	if !ok || r.Client != "c1" || r.F != EventsDropped || r.Value == nil || *r.Value != 22 ||
		!strings.Contains(r.Detail, "renewed 2") || !strings.Contains(r.Detail, "other 5") {
		t.Fatalf("record %+v (value %v), want 22 dropped: renewed 2, 15 names of their own, other 5", r, r.Value)
	}
	none := newEventBudget()
	if _, ok := none.record("c1", 5); ok {
		t.Fatal("a record for a client that dropped nothing")
	}
}
