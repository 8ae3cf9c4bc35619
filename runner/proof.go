package runner

import (
	"context"
	"fmt"
	"io"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// writeProof writes the proof of porcupine's invalid verdict (checker.Proof: the fewest commands of the
// illegal key that still have no legal order) at path as a history excerpt that `lockcheck check` reads,
// lists it in the results' files and returns it for the page. lin is a fresh checker of the run's family:
// the one that judged may have let go of its commands. Nothing here changes the verdict: a proof not
// found within checker.ProofBound, or not written, is a note.
func writeProof(ctx context.Context, h *history.History, lin *checker.Linearizable, res *report.Results, path string) *history.History {
	for _, r := range res.Checkers {
		if r.Checker != lin.Label || r.Valid != checker.Invalid {
			continue
		}
		p, ok := lin.Proof(ctx, h, r, checker.ProofBound)
		if !ok {
			res.Notes = append(res.Notes, fmt.Sprintf("no proof excerpt: the %s violation's key did not give one within %s", lin.Label, checker.ProofBound))
			return nil
		}
		x := p.Excerpt(h)
		err := report.Overwritable(path)
		if err == nil {
			err = report.WriteAtomic(path, func(w io.Writer) error { return x.Write(w) })
		}
		if err != nil {
			res.Notes = append(res.Notes, "no proof excerpt: "+err.Error())
			return nil
		}
		res.Files["proof"] = path
		minimal := ""
		if !p.Minimal {
			minimal = fmt.Sprintf(" (the %s bound ended the minimisation)", checker.ProofBound)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the proof: %d of %d operations still have no legal order on their own%s: %s",
			len(x.Ops), len(h.Ops), minimal, path))
		return x
	}
	return nil
}
