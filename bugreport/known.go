package bugreport

import (
	"bytes"
	"fmt"

	"github.com/lockcheck/lockcheck/report"
)

// writeKnown writes the title block's known-or-new lines: the catalog entry the finding is (a design limit
// and its mitigation, or a known bug and its fix), or that nothing known matches; how to confirm an
// emulation's finding on the real library; whose scripts ran.
func (in *Input) writeKnown(b *bytes.Buffer) {
	lines := in.Results.KnownLines()
	if len(lines) == 0 {
		return
	}
	for _, l := range lines {
		fmt.Fprintf(b, "> %s\n>\n", spans(l)) // results.json is a file: escaped as every string from one
	}
	b.Truncate(b.Len() - 2)
	b.WriteString("\n")
}

// leaseExpected is the promise a lease lock makes: exclusion while the holder's lease lasts. Past it the
// lock may grant another owner by design; a holder that works on is outside the promise.
const leaseExpected = "While an owner's lease lasts, no other owner is inside the lock's critical section: a lease lock promises exclusion only within the lease (or, with a watchdog, as long as the holder's renewals reach the server); past it the lock may grant another owner by design, and a holder that works on is outside the promise."

// expected is the promise the leading checker holds the lock to, as the lock makes it, and for an overlap
// which side of the first owner's lease the run fell on.
func (in *Input) expected(kind report.ViolationKind) (string, bool) {
	e, ok := expected[kind]
	st := in.Results.Story
	if kind != report.Overlap || st == nil || st.Lease == "" {
		return e, ok
	}
	first, second := "the first owner", "the second"
	if len(st.Owners) == 2 {
		first, second = st.Owners[0].Name, st.Owners[1].Name
	}
	switch st.Lease {
	case report.WithinLease:
		return leaseExpected + fmt.Sprintf("\n\nThis run fell within the lease: %s was let in while %s's lease still ran, so the lock broke its promise.", second, first), true
	case report.PastLease:
		t := fmt.Sprintf("\n\nThis run fell past the lease: %s was let in after %s's lease had ended", second, first)
		if st.Shortened {
			t += " (a re-entry had replaced it with a shorter one)"
		}
		if st.Late {
			t += fmt.Sprintf(" (%s heard of its grant only after that lease could have ended)", first)
		}
		return leaseExpected + t + ", so the lock kept its promise and the holder worked on outside it: what an application gets from a lease lock without fencing tokens.", true
	}
	return e, ok
}
