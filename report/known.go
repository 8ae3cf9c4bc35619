package report

// Known is what an invalid run's finding is against lockcheck repro's catalog (package known matches it):
// the entry it is, or that nothing known matches; every output prints Text.
type Known struct {
	Entry     *KnownEntry `json:"entry,omitempty"` // nil: nothing in the catalog matches
	Signature string      `json:"signature"`       // the finding's signature (known.Signature.String)
	// Confirm says how to confirm a finding of lockcheck's Go emulation on the real library ("" for a
	// library's own run).
	Confirm string `json:"confirm,omitempty"`
	// Scripts says whose scripts ran, where they were not the library's own (--scripts, --lock-spec).
	Scripts string `json:"scripts,omitempty"`
	Text    string `json:"text"`
}

// KnownEntry is a catalog entry a run matched: a design limit (with its mitigation) or a library's bug
// (with the release that fixed it, if one did).
type KnownEntry struct {
	Name       string `json:"name"`
	Summary    string `json:"summary,omitempty"`
	Mitigation string `json:"mitigation,omitempty"`
	Fixed      string `json:"fixed,omitempty"`
	Issue      string `json:"issue,omitempty"`
	Design     bool   `json:"design,omitempty"`
	// Of is what a design limit is a limit of ("every lease lock"), or the bug's library and affected
	// versions.
	Of string `json:"of,omitempty"`
}

// KnownText is the run's known-or-new line, or "" when none was made (a valid run, older results).
func (r *Results) KnownText() string {
	if r.Known == nil {
		return ""
	}
	return r.Known.Text
}

// KnownLines are the run's known-or-new line and, where they apply, how to confirm it on the real library
// and whose scripts ran: every output that tells the story prints them under it.
func (r *Results) KnownLines() []string {
	if r.Known == nil {
		return nil
	}
	var out []string
	for _, l := range []string{r.Known.Text, r.Known.Scripts, r.Known.Confirm} {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
