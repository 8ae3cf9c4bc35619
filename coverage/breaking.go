package coverage

import (
	"encoding/json"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Breaking is the transition at the run's first violation (the earliest among the invalid results): for
// porcupine, the command no legal order can place (its culprit, called at the violation's start); for
// the other checkers, the latest grant placed by then on the violation's key (for mutual exclusion, the
// intruder's: the grant that broke exclusion), else the latest command placed by then. It is the shape
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
	var culprit, grant, last *Transition
	walk(h, func(c *cmd, t Transition) {
		if !v.onKey(c) {
			return
		}
		if v.culprit && c.in.Call == r.At && culprit == nil {
			culprit = &t
		}
		if c.at > r.At {
			return
		}
		last = &t
		if t.Outcome == Granted && (v.who == "" || v.who == c.who) {
			grant = &t
		}
	})
	for _, t := range []*Transition{culprit, grant, last} {
		if t != nil {
			return *t, true
		}
	}
	return Transition{}, false
}

// violation is what a result's details say of where it broke: the key, the intruder (mutual exclusion),
// and whether it names porcupine's culprit.
type violation struct {
	key, who string
	culprit  bool
}

// violationOf reads a result's details, which are the checker's own types in a run and plain JSON in a
// results.json read back: a JSON round trip reads both.
func violationOf(r checker.Result) violation {
	var d struct {
		Key     string `json:"key"`
		Culprit *struct {
			Key string `json:"key"`
		} `json:"culprit"`
		First *struct {
			Key      string `json:"key"`
			Intruder string `json:"intruder"`
		} `json:"first"`
	}
	if b, err := json.Marshal(r.Details); err == nil {
		_ = json.Unmarshal(b, &d) // details of another shape say nothing of a key: any key then
	}
	v := violation{key: d.Key}
	if d.Culprit != nil {
		v.culprit = true
		if d.Culprit.Key != "" {
			v.key = d.Culprit.Key
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
