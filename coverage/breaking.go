package coverage

import (
	"encoding/json"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Breaking is the transition at the run's first violation (the earliest among the invalid results): the
// command the violation names (porcupine's culprit, which no legal order can place; lost-lock's command
// that found the lock gone), else the latest grant placed by the violation's time on its key (for mutual
// exclusion, the intruder's: the grant that broke exclusion), else the latest command placed by then. It is the shape
// of a finding's signature. False when no result is invalid, or no command comes before the violation.
func Breaking(h *history.History, rs []checker.Result) (Transition, bool) {
	first := -1
	for i, r := range rs {
		if r.Valid == checker.Invalid && (first < 0 || r.At < rs[first].At) {
			first = i
		}
	}
	if first < 0 {
		return Transition{}, false
	}
	r := rs[first]
	v := violationOf(r)
	var named, grant, last *Transition
	walk(h, func(c *cmd, t Transition) {
		if !v.onKey(c) {
			return
		}
		if v.call >= 0 && c.in.Call == v.call && named == nil {
			named = &t
		}
		if c.at > r.At {
			return
		}
		last = &t
		if t.Outcome == Granted && (v.who == "" || v.who == c.who) {
			grant = &t
		}
	})
	for _, t := range []*Transition{named, grant, last} {
		if t != nil {
			return *t, true
		}
	}
	return Transition{}, false
}

// violation is what a result's details say of where it broke: the key, the intruder (mutual exclusion),
// and the call of the command they name (porcupine's culprit, at the violation's start; the command that
// found a lost lock gone), -1 when none.
type violation struct {
	key, who string
	call     int64
}

// violationOf reads a result's details, which are the checker's own types in a run and plain JSON in a
// results.json read back (a JSON round trip reads both): an object (porcupine's, mutual exclusion's) or a
// list whose first entry is the first violation (lost-lock's losses).
func violationOf(r checker.Result) violation {
	type named struct {
		Key  string `json:"key"`
		Call *int64 `json:"call_ns"`
	}
	var d struct {
		named
		Culprit *named `json:"culprit"`
		First   *struct {
			Key      string `json:"key"`
			Intruder string `json:"intruder"`
		} `json:"first"`
	}
	b, err := json.Marshal(r.Details)
	if err == nil && len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) == nil && len(list) > 0 {
			b = list[0]
		}
	}
	if err == nil {
		_ = json.Unmarshal(b, &d) // details of another shape say nothing of a key: any key then
	}
	v := violation{key: d.Key, call: -1}
	if d.Call != nil {
		v.call = *d.Call
	}
	if c := d.Culprit; c != nil {
		v.call = r.At // the culprit's call
		if c.Key != "" {
			v.key = c.Key
		}
	}
	if d.First != nil {
		v.key, v.who = d.First.Key, d.First.Intruder
	}
	return v
}

// onKey reports whether c is on the violation's key (named with its node, or not).
func (v violation) onKey(c *cmd) bool {
	if v.key == "" {
		return true
	}
	k, _ := checker.SplitKey(v.key)
	return v.key == c.in.Key || k == c.raw
}
