package shrink

import (
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

// Signature is how a run fails: the checker that found it and the kind of violation. A candidate fails
// the same way when that checker is invalid in it with the same kind, whatever the other checkers say.
type Signature struct {
	Checker string               `json:"checker"`
	Kind    report.ViolationKind `json:"kind"`
}

func (s Signature) String() string { return s.Checker + " (" + string(s.Kind) + ")" }

// violationKind is the kind of a checker's violation, as the run's story names it.
func violationKind(r checker.Result) report.ViolationKind { return report.KindOf(r.Checker) }

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
		if name == c.Checker || (name == "" && (first == nil || report.Rank(c) < report.Rank(*first) || report.Rank(c) == report.Rank(*first) && c.At < first.At)) {
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
