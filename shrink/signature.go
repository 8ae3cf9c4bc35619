package shrink

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

// Signature is how a run fails: the checker that found it and the kind of violation. A candidate fails
// the same way when that checker is invalid in it with the same kind, whatever the other checkers say.
type Signature struct {
	Checker string `json:"checker"`
	Kind    string `json:"kind"`
}

func (s Signature) String() string { return s.Checker + " (" + s.Kind + ")" }

// violationKind is the kind of a checker's violation. Until report gives one typed kind per result, it is
// this table of the checkers' stable names (a checker not in it is its own kind); swap this one
// function for report's when it lands.
func violationKind(r checker.Result) string {
	if k, ok := kindOf[r.Checker]; ok {
		return k
	}
	return r.Checker
}

var kindOf = map[string]string{"mutual-exclusion": "overlap", "lost-lock": "lost-lock", "told-of-loss": "not-told",
	"porcupine": "no-legal-order"}

// lead ranks the kinds a shrink keeps by default, the harm a reader files first: two owners at once, then
// a lock gone early, a holder not told, answers with no legal order; any other kind after them.
var lead = []string{"overlap", "lost-lock", "not-told", "no-legal-order"}

func rank(c checker.Result) int {
	if i := slices.Index(lead, violationKind(c)); i >= 0 {
		return i
	}
	return len(lead)
}

// SignatureOf is an invalid run's signature: the named checker's, or (name "") the invalid checker of the
// highest-ranked kind, the earliest violation among equals. The checkers of one violation often find it
// microseconds apart, so the kind, not the time, decides.
func SignatureOf(r *report.Results, name string) (Signature, error) {
	var first *checker.Result
	var invalid []string
	for i, c := range r.Checkers {
		if c.Valid != checker.Invalid {
			continue
		}
		invalid = append(invalid, c.Checker)
		if name == c.Checker || (name == "" && (first == nil || rank(c) < rank(*first) || rank(c) == rank(*first) && c.At < first.At)) {
			first = &r.Checkers[i]
		}
	}
	switch {
	case len(invalid) == 0:
		return Signature{}, fmt.Errorf("the run's verdict is %s: shrink needs an invalid run", r.Valid)
	case first == nil:
		return Signature{}, fmt.Errorf("--checker %s is not invalid in this run (invalid: %s)", name, strings.Join(invalid, ", "))
	}
	return Signature{Checker: first.Checker, Kind: violationKind(*first)}, nil
}

// Match says whether a run fails the same way, when (its checker's first violation, on the run's clock),
// and otherwise what it did instead, in a few words.
func (s Signature) Match(r *report.Results) (ok bool, at int64, other string) {
	var invalid []string
	for _, c := range r.Checkers {
		if c.Valid != checker.Invalid {
			continue
		}
		if c.Checker == s.Checker && violationKind(c) == s.Kind {
			return true, c.At, ""
		}
		invalid = append(invalid, c.Checker)
	}
	if len(invalid) > 0 {
		return false, 0, "invalid by " + strings.Join(invalid, ", ") + " only"
	}
	return false, 0, r.Valid.String()
}
