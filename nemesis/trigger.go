package nemesis

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Event is one lock operation as the history recorder streams it: an invoke or a completion.
type Event struct {
	Time   int64  // ns on the run's clock
	Type   string // invoke, ok, fail or unknown
	Client string
	Key    string
	Owner  string
	Node   string // the node a lock command went to; empty for a caller's own tryLock and unlock
	F      string // tryLock and unlock (the caller's), acquire and release (the lock's commands)
	// Nodes are, on a grant, the nodes whose acquire for this owner and key succeeded since its tryLock began.
	Nodes []string
	// Nested: a reentrant tryLock or unlock inside the caller's own hold (set by the caller on its invoke;
	// the hub carries it to the completion). Such a grant or release changes no holder, so no trigger fires.
	Nested bool
	// Taken (set by the hub) on an unlock's completion: another owner's grant on the key was recorded and it
	// has not unlocked since. A waiter's acquire can reach the server between the unlock and its reply.
	Taken bool
}

// Trigger is a kind of lock event that can fire a fault (--nemesis-trigger), registered by name.
type Trigger struct {
	Name  string
	About string
	Match func(Event) bool
}

var triggers = map[string]Trigger{}

// RegisterTrigger adds a trigger kind.
func RegisterTrigger(t Trigger) { triggers[t.Name] = t }

// releases are the calls the unlock trigger fires at: a lock's unlock, a latch's countDown (the emulation's
// name and the worker protocol's, history.UnseenPrefix + count_down).
var releases = []string{"unlock", "countDown", "lcp_count_down"}

// triggered is how a fault takes a trigger: which event fires it, and how the event aims it (the holder,
// the nodes that hold the lock) given the targets the plan drew.
type triggered struct {
	trigger string
	aim     func(ev Event, planned []Target) []Target
	// phase: the fault starts on the clock and the trigger fires its decisive phase (the lagging failover's
	// isolation, once the lag has begun); without it the trigger starts the fault.
	phase bool
}

var triggeredBy = map[string]triggered{}

// RegisterTriggered says which trigger a fault takes.
func RegisterTriggered(fault, trigger string, aim func(Event, []Target) []Target) {
	triggeredBy[fault] = triggered{trigger: trigger, aim: aim}
}

func init() {
	// grant: a caller was just granted the lock (its tryLock returned true) or a permit (a semaphore's
	// tryAcquire), before it goes on.
	RegisterTrigger(Trigger{Name: "grant", About: "a caller was just granted the lock or a permit, before its critical section",
		Match: func(e Event) bool { return (e.F == "tryLock" || e.F == "tryAcquire") && e.Type == "ok" && !e.Nested }})
	// unlock: a caller is about to unlock (its unlock began, its first command not sent yet); a latch's
	// countDown is its release, so it fires there too (Redisson #3850: a resent countDown).
	RegisterTrigger(Trigger{Name: "unlock", About: "a caller begins its unlock or countDown, before its first command",
		Match: func(e Event) bool { return e.Type == "invoke" && slices.Contains(releases, e.F) && !e.Nested }})

	// release: a caller's unlock was just acknowledged and no other grant has been recorded since: the lock
	// is free on the primary and its replicas, unless an acquire already on the wire takes it before the
	// fault lands (a failover fired then splits a held lock).
	RegisterTrigger(Trigger{Name: "release", About: "a caller's unlock was just acknowledged (the lock is free)",
		Match: func(e Event) bool { return e.F == "unlock" && e.Type == "ok" && !e.Nested && !e.Taken }})

	// attempt: a caller is about to send an acquire: a tryLock's or tryAcquire's first script, or a retry
	// while it waits. A clock fault fired here is in the script that follows; fired at the call's start
	// instead, it could land on a waiter asleep for the whole fault, and waiters' calls begin only as
	// often as grants come (under load, less than once in a 1 s window).
	RegisterTrigger(Trigger{Name: "attempt", About: "a caller is about to send an acquire (first or retried)",
		Match: func(e Event) bool { return e.Type == "invoke" && e.F == "acquire" }})
}

// HasTrigger says whether a fault can be fired by the lock's own events (--nemesis-trigger).
func HasTrigger(fault string) bool {
	_, ok := triggeredBy[fault]
	return ok
}

// TriggerOf is the event that fires a fault under --nemesis-trigger ("grant", "release", ...), "" for a
// fault that takes none (it runs on the clock).
func TriggerOf(fault string) string { return triggeredBy[fault].trigger }

// TriggerNames lists the faults that take a trigger, with it.
func TriggerNames() []string {
	var out []string
	for f, t := range triggeredBy {
		out = append(out, f+" ("+t.trigger+")")
	}
	sort.Strings(out)
	return out
}

// Triggers receives the stream of lock events and fires at most one armed fault at a time: the first
// matching event after Skip others. Its Observe is called by the recorder in the recording goroutine,
// right after the record is written, so a fault fired there lands before that client goes on.
type Triggers struct {
	mu    sync.Mutex
	armed *arming
	held  map[string][]string // owner/key -> nodes whose acquire succeeded since its tryLock began
	// nested: owner/key/call whose reentrant call is in flight (an owner makes one call at a time per key)
	nested map[string]bool
	// holders: key -> owners granted it that have not unlocked it since (an unknown unlock may have left
	// the lock held, so only an acknowledged one or the owner's next tryLock ends the hold here)
	holders map[string]map[string]bool
}

type arming struct {
	match func(Event) bool
	skip  int
	only  map[string]bool // clients named by --nemesis-targets: only their events count
	fire  func(Event)
}

// NewTriggers returns a hub with nothing armed.
func NewTriggers() *Triggers {
	return &Triggers{held: map[string][]string{}, nested: map[string]bool{}, holders: map[string]map[string]bool{}}
}

// Observe takes one event. It is cheap when nothing is armed.
func (t *Triggers) Observe(ev Event) {
	k := ev.Owner + "\x00" + ev.Key
	t.mu.Lock()
	if call := k + "\x00" + ev.F; ev.Type == "invoke" && ev.Nested {
		t.nested[call] = true
	} else if ev.Type != "invoke" && t.nested[call] {
		ev.Nested = true
		delete(t.nested, call)
	}
	switch {
	case ev.Nested: // the outer hold's nodes stay as they are
	case ev.F == "tryLock" && ev.Type == "invoke":
		delete(t.held, k)
		delete(t.holders[ev.Key], holder(ev))
	case ev.F == "acquire" && ev.Type == "ok" && ev.Node != "":
		if !slices.Contains(t.held[k], ev.Node) {
			t.held[k] = append(t.held[k], ev.Node)
		}
	case ev.F == "tryLock" && ev.Type == "ok":
		ev.Nodes = t.held[k]
		delete(t.held, k)
		if t.holders[ev.Key] == nil {
			t.holders[ev.Key] = map[string]bool{}
		}
		t.holders[ev.Key][holder(ev)] = true
	case ev.F == "unlock" && ev.Type == "ok":
		delete(t.holders[ev.Key], holder(ev))
		ev.Taken = len(t.holders[ev.Key]) > 0
	}
	a := t.armed
	if a == nil || !a.match(ev) || len(a.only) > 0 && !a.only[ev.Client] {
		t.mu.Unlock()
		return
	}
	if a.skip > 0 {
		a.skip--
		t.mu.Unlock()
		return
	}
	t.armed = nil
	t.mu.Unlock()
	a.fire(ev) // outside the lock: the fault's start may take a few milliseconds
}

// holder names who holds a lock: its owner, or the client where a worker's records name none.
func holder(ev Event) string {
	if ev.Owner != "" {
		return ev.Owner
	}
	return ev.Client
}

// arm makes the (skip+1)-th next event of the trigger call fire, once, in the recording goroutine. The
// returned disarm reports whether it disarmed it before it fired.
func (t *Triggers) arm(trigger string, skip int, only []string, fire func(Event)) (disarm func() bool, err error) {
	tr, ok := triggers[trigger]
	if !ok {
		return nil, fmt.Errorf("unknown trigger %q", trigger)
	}
	a := &arming{match: tr.Match, skip: skip, fire: fire}
	if len(only) > 0 {
		a.only = map[string]bool{}
		for _, c := range only {
			a.only[c] = true
		}
	}
	t.mu.Lock()
	t.armed = a
	t.mu.Unlock()
	return func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.armed == a {
			t.armed = nil
			return true
		}
		return false
	}, nil
}
