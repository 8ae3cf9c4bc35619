package main

import (
	"github.com/lockcheck/lockcheck/coverage"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/known"
	"github.com/lockcheck/lockcheck/report"
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

// signatureOf is an invalid run's finding signature (package known), its shape the transition that broke
// (coverage.Breaking, where results.json does not carry it); false for a run that is not invalid.
func signatureOf(h *history.History, res *report.Results) (known.Signature, bool) {
	sig, ok := known.SignatureOf(h, res)
	if !ok {
		return sig, false
	}
	if t, ok := coverage.Breaking(h, res.Checkers); ok && sig.Shape == "" {
		sig.Shape = t.String()
	}
	return sig, true
}

// findingKey is what files runs under one finding: the signature without the other checkers that happened
// to be invalid beside the leading one (one bug shows them in some runs and not in others).
func findingKey(s known.Signature) string {
	s.Also = nil
	return s.String()
}

// knownOf is the catalog entry an invalid run matches (its name "" for none) and its summary.
func knownOf(h *history.History, res *report.Results) (string, string) {
	sig, ok := signatureOf(h, res)
	if !ok || h.Run == nil {
		return "", ""
	}
	if e, ok := known.Match(sig, *h.Run); ok {
		return e.Name, e.Summary
	}
	return "", ""
}
