// Package coverage counts what a history showed from the lock model's point of view: each lock command as
// an abstract transition (the state class of its key before, the operation and its outcome, how its lease
// relates to what the hold had left, whether another owner was waiting, the fault in force, and on the wire
// which script answered which value). The state space is small on purpose: no times, no counts beyond a
// few buckets, so that a search over schedules (lockcheck explore) can saturate it and "new" means a new
// shape of run, not a new timestamp. docs/coverage.md says how each part is counted.
package coverage

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Transition is one abstract step of the lock model. Its fields are short words (the constants below);
// Fault and Script are "" where no fault was in force or the record is not the wire's.
type Transition struct {
	Family  string `json:"family"`            // coverage family: mutex, mutex/fair, rwlock, semaphore, ... (Families)
	Before  string `json:"before"`            // the key's state class before: free, held-once, readers-2, permits-0, ...
	Op      string `json:"op"`                // the operation relative to the caller: acquire, reenter, release, stray-release, ...
	Outcome string `json:"outcome"`           // granted, refused, released, kept, ok, yes, no, unknown; resent-N:..., replayed
	Lease   string `json:"lease"`             // shorter, equal, longer than what the key's hold had left; none
	Fault   string `json:"fault,omitempty"`   // the kinds of the faults in force, sorted, joined by +
	Script  string `json:"script,omitempty"`  // on the wire: the script's shape and its reply's class, "release→0"
	Waiting bool   `json:"waiting,omitempty"` // another owner had an acquire in flight on the key
}

// Lease relations.
const (
	Shorter = "shorter"
	Equal   = "equal"
	Longer  = "longer"
	None    = "none"
)

// String is the transition's stable one-line key: "mutex held-once reenter granted lease=shorter waiting
// fault=partition script=acquire→nil" (waiting, fault and script only where they are set).
func (t Transition) String() string {
	var b strings.Builder
	b.WriteString(t.Family + " " + t.Before + " " + t.Op + " " + t.Outcome + " lease=" + t.Lease)
	if t.Waiting {
		b.WriteString(" waiting")
	}
	if t.Fault != "" {
		b.WriteString(" fault=" + t.Fault)
	}
	if t.Script != "" {
		b.WriteString(" script=" + t.Script)
	}
	return b.String()
}

// Core is the transition without its fault and script: what Allowed lists (the model says nothing of
// faults or scripts).
func (t Transition) Core() Transition {
	t.Fault, t.Script = "", ""
	return t
}

// Map counts transitions; its zero value is an empty map, ready to use.
type Map struct {
	n map[Transition]int
}

// NewMap is an empty map.
func NewMap() *Map { return &Map{n: map[Transition]int{}} }

// Len is the number of distinct transitions.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.n)
}

// Count is how often t was seen.
func (m *Map) Count(t Transition) int {
	if m == nil {
		return 0
	}
	return m.n[t]
}

// Has reports whether t was seen.
func (m *Map) Has(t Transition) bool { return m.Count(t) > 0 }

func (m *Map) add(t Transition, n int) bool {
	if m.n == nil {
		m.n = map[Transition]int{}
	}
	old := m.n[t]
	m.n[t] = old + n
	return old == 0
}

// Add merges o into m and returns the transitions m had not seen, sorted by String.
func (m *Map) Add(o *Map) (added []Transition) {
	if o == nil {
		return nil
	}
	for t, n := range o.n {
		if m.add(t, n) {
			added = append(added, t)
		}
	}
	sortTransitions(added)
	return added
}

// Transitions lists the distinct transitions seen, sorted by String.
func (m *Map) Transitions() []Transition {
	if m == nil {
		return nil
	}
	out := make([]Transition, 0, len(m.n))
	for t := range m.n {
		out = append(out, t)
	}
	sortTransitions(out)
	return out
}

// Core is the map with every transition's fault and script cleared (Transition.Core), counts summed.
func (m *Map) Core() *Map {
	c := NewMap()
	if m == nil {
		return c
	}
	for t, n := range m.n {
		c.add(t.Core(), n)
	}
	return c
}

// Unreached lists what the model allows for family (Allowed) that m has not seen, faults and scripts
// aside.
func (m *Map) Unreached(family string) []Transition {
	core := m.Core()
	var out []Transition
	for _, t := range Allowed(family) {
		if !core.Has(t) {
			out = append(out, t)
		}
	}
	return out
}

func sortTransitions(ts []Transition) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].String() < ts[j].String() })
}

// Seen is one transition with its count, as results.json lists it.
type Seen struct {
	Transition
	Count int `json:"count"`
}

// mapJSON is how a Map is written: the number of distinct transitions, then each with its count.
type mapJSON struct {
	Distinct    int    `json:"distinct"`
	Transitions []Seen `json:"transitions"`
}

// MarshalJSON writes {"distinct": N, "transitions": [{..., "count": n}]}, sorted by String.
func (m *Map) MarshalJSON() ([]byte, error) {
	j := mapJSON{Distinct: m.Len(), Transitions: []Seen{}}
	for _, t := range m.Transitions() {
		j.Transitions = append(j.Transitions, Seen{t, m.n[t]})
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Map) UnmarshalJSON(b []byte) error {
	var j mapJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("coverage map: %w", err)
	}
	m.n = map[Transition]int{}
	for _, s := range j.Transitions {
		if s.Count < 1 {
			return fmt.Errorf("coverage map: transition %q counted %d", s.Transition, s.Count)
		}
		m.add(s.Transition, s.Count)
	}
	return nil
}
