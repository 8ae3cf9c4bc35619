package runner

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/report"
)

// writeProof writes the proof of the leading invalid verdict that has one at path, as a history excerpt that
// `lockcheck check` reads: porcupine's (checker.Proof: the fewest commands of the illegal key that still
// have no legal order), else an interval checker's citation (checker.Citer: the sections, grants and faults
// its violation rests on). It lists the file in the results' files and returns the excerpt and its checker for the page.
// cs are fresh checkers of the run's family, in the order of res.Checkers: the porcupine checker that
// judged may have let go of its commands. bound bounds porcupine's minimisation: checker.ProofBound, or the
// check's own timeout where that is less (an interrupted run's few seconds). Nothing here changes the
// verdict: a proof not found within it, or not written, is a note.
func writeProof(ctx context.Context, h *history.History, cs []checker.Checker, res *report.Results, path string, bound time.Duration) (*history.History, string) {
	invalid := false
	// The proof is of the finding the story leads with (report.Rank), so the two tell one violation.
	order := make([]int, len(res.Checkers))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return report.Rank(res.Checkers[order[a]]) < report.Rank(res.Checkers[order[b]]) })
	for _, i := range order {
		r := res.Checkers[i]
		if r.Valid != checker.Invalid || i >= len(cs) {
			continue
		}
		invalid = true
		var p checker.Proof
		ok := false
		switch c := cs[i].(type) {
		case *checker.Linearizable:
			p, ok = c.Proof(ctx, h, r, bound)
		case checker.Citer:
			p, ok = c.Cite(h, r)
		}
		if !ok {
			continue
		}
		x := p.Excerpt(h)
		err := report.Overwritable(path)
		if err == nil {
			err = report.WriteAtomic(path, func(w io.Writer) error { return x.Write(w) })
		}
		if err != nil {
			res.Notes = append(res.Notes, "no proof excerpt: "+err.Error())
			return nil, ""
		}
		res.Files["proof"] = path
		what := fmt.Sprintf("%d of %d operations", len(x.Ops), len(h.Ops))
		if len(x.Sections) > 0 {
			what = fmt.Sprintf("%d critical sections and %d grants", len(x.Sections), len(x.Ops))
		}
		if !p.Minimal {
			what += fmt.Sprintf(" (the %s bound ended the minimisation)", bound)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the proof (%s): %s, on their own still invalid: %s", p.Checker, what, path))
		return x, p.Checker
	}
	if invalid {
		res.Notes = append(res.Notes, fmt.Sprintf("no proof excerpt: no invalid checker gave one (porcupine's within %s)", bound))
	}
	return nil, ""
}
