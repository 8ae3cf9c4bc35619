package worker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// What a worker's events may cost a run (docs/protocol.md, Events). A worker may send events at any time,
// but they must neither come before the meta record (a history begins with it) nor starve the run: each
// client records EventBurst events at once and EventRate a second after that; a lost event for a lock its
// thread holds is always recorded (the told-of-loss checker judges it, and there is one per grant at most).
const (
	EventBurst = 1000
	EventRate  = 1000 // a second
	// EventsHeld bounds the events a run holds until its meta record is written.
	EventsHeld = 1000
)

// EventsDropped is the F of the one event record of a client that says how many of its worker's events were
// not recorded (its value), at the end of the worker's output.
const EventsDropped = "events-dropped"

// Events holds a run's worker events until its meta record is written (the workers send theirs from
// init_ok on, and the meta record waits for every worker's init_ok), then lets them through. A nil *Events
// is always open (a worker started outside a run: the kind probe).
type Events struct {
	mu   sync.Mutex
	open bool
	rec  *history.Recorder
	held []history.Record
}

// NewEvents is a run's shut gate for records to rec.
func NewEvents(rec *history.Recorder) *Events { return &Events{rec: rec} }

// Open writes the events held so far, in the order they came, and lets later ones through; the meta
// record has been written.
func (e *Events) Open() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.held {
		e.rec.Write(r)
	}
	e.open, e.held = true, nil
}

// write records r, or holds it until Open; false: the run holds EventsHeld already, and r is dropped. rec
// is the client's recorder, for a nil e.
func (e *Events) write(rec *history.Recorder, r history.Record) bool {
	if e == nil {
		rec.Write(r)
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.open:
		e.rec.Write(r)
	case len(e.held) < EventsHeld:
		e.held = append(e.held, r)
	default:
		return false
	}
	return true
}

// eventBudget is one client's allowance of events: a token bucket, used by its reader goroutine only.
type eventBudget struct {
	tokens  float64
	last    time.Time
	dropped map[string]int64 // by event name
}

func newEventBudget() eventBudget {
	return eventBudget{tokens: EventBurst, dropped: map[string]int64{}}
}

// take spends one event's token at now, or counts event as dropped.
func (b *eventBudget) take(now time.Time, event string) bool {
	if !b.last.IsZero() {
		b.tokens = min(EventBurst, b.tokens+now.Sub(b.last).Seconds()*EventRate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	b.drop(event)
	return false
}

func (b *eventBudget) drop(event string) {
	event = history.ClipText(printable(event), 64)
	if len(b.dropped) < 16 || b.dropped[event] > 0 { // a worker's names are its own: keep a few
		b.dropped[event]++
	} else {
		b.dropped["other"]++
	}
}

// record is the one record saying what was dropped, or false when nothing was.
func (b *eventBudget) record(client string, at int64) (history.Record, bool) {
	var n int64
	names := slices.Sorted(maps.Keys(b.dropped))
	each := make([]string, len(names))
	for i, name := range names {
		n += b.dropped[name]
		each[i] = fmt.Sprintf("%s %d", name, b.dropped[name])
	}
	if n == 0 {
		return history.Record{}, false
	}
	return history.Record{Type: history.Event, Time: at, Client: client, F: EventsDropped, Value: &n,
		Detail: fmt.Sprintf("%d of the worker's events not recorded (%s): over %d at once, %d a second, or %d before the run began",
			n, strings.Join(each, ", "), EventBurst, EventRate, EventsHeld)}, true
}
