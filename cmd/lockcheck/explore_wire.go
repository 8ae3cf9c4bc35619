package main

import (
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/shrink"
)

// The places explore reads a run through the lock's model and the catalog: a run's coverage, an invalid
// run's signature, and the catalog entry it matches.

// coverageOf is a run's transitions (package coverage), by their stable keys.
func coverageOf(h *history.History) (map[string]int, *coverage.Map) {
	m := coverage.Of(h)
	out := map[string]int{}
	for _, t := range m.Transitions() {
		out[t.String()] = m.Count(t)
	}
	return out, m
}

// signatureOf is an invalid run's finding signature. Interim, until package known: shrink's (checker and
// kind) and the breaking transition's shape.
func signatureOf(h *history.History, res *report.Results) string {
	sig, err := shrink.SignatureOf(res, "")
	if err != nil {
		return ""
	}
	s := sig.String()
	if t, ok := coverage.Breaking(h, res.Checkers); ok {
		s += " at " + t.String()
	}
	return s
}

// knownOf is the catalog entry an invalid run matches ("" for none) and its summary.
func knownOf(_ *history.History, _ *report.Results) (string, string) { return "", "" }
