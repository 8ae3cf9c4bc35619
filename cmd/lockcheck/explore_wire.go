package main

import (
	"fmt"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/shrink"
)

// The four places explore reads a run through the lock's model and the catalog: a run's coverage, an
// invalid run's signature, the catalog entry it matches, and what the family's model allows.

// coverageOf is a run's transitions. Interim, until package coverage: each lock call's operation, nesting,
// outcome and lease.
func coverageOf(h *history.History) map[string]int {
	out := map[string]int{}
	for _, op := range h.Ops {
		if op.Invoke.Src != "" || op.Complete == nil {
			continue
		}
		a := op.Invoke.Args
		out[fmt.Sprintf("%s nested=%d read=%d lease=%d %s", op.Invoke.F, a["nested"], a["read"], a["lease_ms"], op.Complete.Type)]++
	}
	return out
}

// signatureOf is an invalid run's finding signature. Interim, until package known: shrink's (checker and kind).
func signatureOf(_ *history.History, res *report.Results) string {
	sig, err := shrink.SignatureOf(res, "")
	if err != nil {
		return ""
	}
	return sig.String()
}

// knownOf is the catalog entry an invalid run matches ("" for none) and its summary.
func knownOf(_ *history.History, _ *report.Results) (string, string) { return "", "" }

// allowedOf is every transition the family's model allows.
func allowedOf(string) []string { return nil }
