// Package bisect finds the release where a catalogued bug's verdict flips: a binary search over a library's
// stable releases between a good and a bad one, each step judged by an oracle (a few seeded runs).
package bisect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Verdict is one release's outcome.
type Verdict int

const (
	Good Verdict = iota // every seed valid
	Bad                 // caught on at least one seed
	Skip                // could not be judged: it does not build or run with the worker, or gave no verdict
)

func (v Verdict) String() string { return [...]string{"good", "bad", "skip"}[v] }

// Result is the oracle's answer for one release.
type Result struct {
	Verdict        Verdict
	Caught, Seeds  int
	Why            string // for a skip: why it could not be judged
	Took           time.Duration
	FirstViolation time.Duration // median time to the first violation over the caught seeds
	Dir            string        // where its runs are kept, when they are
}

// Oracle judges one release.
type Oracle func(ctx context.Context, version string) Result

// Step is one judged release, in the order they were tried.
type Step struct {
	Version string
	Result
}

// Outcome is where the verdict flips: releases up to Last have the older end's verdict, First is the
// first with the newer end's. Skipped are the releases between them that could not be judged: the flip
// may be at any of them, or at First.
type Outcome struct {
	Steps       []Step
	Last, First string
	Older       Verdict // the older end's verdict; First has the other one
	Skipped     []string
}

// Exact says whether the flip is pinned to one release.
func (o Outcome) Exact() bool { return len(o.Skipped) == 0 }

// InputError is a request that cannot be bisected as given (bad input, not a failed search).
type InputError struct{ Msg string }

func (e InputError) Error() string { return e.Msg }

// Search bisects releases (stable, oldest first) between good and bad, in either order: when good is the
// older one it finds the release that brought the bug in, when good is the newer one the release that
// fixed it. It judges both ends first, and refuses when an end does not have its stated verdict. Each
// judged release is passed to progress as it is known.
func Search(ctx context.Context, releases []string, good, bad string, oracle Oracle, progress func(Step)) (Outcome, error) {
	gi, bi := slices.Index(releases, good), slices.Index(releases, bad)
	for _, v := range []struct {
		flag, version string
		i             int
	}{{"--good", good, gi}, {"--bad", bad, bi}} {
		if v.i < 0 {
			return Outcome{}, InputError{fmt.Sprintf("%s %s is not a stable release in the registry's list (%s)", v.flag, v.version, around(releases, v.version))}
		}
	}
	if gi == bi {
		return Outcome{}, InputError{fmt.Sprintf("--good and --bad are the same release (%s): give two different ones", good)}
	}
	var out Outcome
	judge := func(v string) Result {
		r := oracle(ctx, v)
		s := Step{Version: v, Result: r}
		out.Steps = append(out.Steps, s)
		if progress != nil {
			progress(s)
		}
		return r
	}
	for _, end := range []struct {
		flag, version string
		want          Verdict
	}{{"--good", good, Good}, {"--bad", bad, Bad}} {
		r := judge(end.version)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		switch {
		case r.Verdict == Skip:
			return out, InputError{fmt.Sprintf("%s %s cannot be judged: %s", end.flag, end.version, r.Why)}
		case r.Verdict != end.want && end.want == Good:
			hint := ""
			if gi < bi {
				hint = fmt.Sprintf("; if the bug was fixed rather than introduced, the good side is the newer one: --good %s --bad %s", bad, good)
			}
			return out, InputError{fmt.Sprintf("--good %s is not good: caught on %d of %d seeds%s", good, r.Caught, r.Seeds, hint)}
		case r.Verdict != end.want:
			return out, InputError{fmt.Sprintf("--bad %s is not bad: valid on all %d seeds (more --seeds, or another range)", bad, r.Seeds)}
		}
	}
	lo, hi := min(gi, bi), max(gi, bi) // lo has the older end's verdict, hi the newer's
	out.Older = Good
	if bi < gi {
		out.Older = Bad
	}
	skipped := map[int]bool{}
	for {
		mid := pick(lo, hi, skipped)
		if mid < 0 {
			break
		}
		r := judge(releases[mid])
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		switch {
		case r.Verdict == Skip:
			skipped[mid] = true
		case r.Verdict == out.Older:
			lo = mid
		default:
			hi = mid
		}
	}
	out.Last, out.First = releases[lo], releases[hi]
	for i := lo + 1; i < hi; i++ {
		out.Skipped = append(out.Skipped, releases[i]) // every one between them was skipped
	}
	return out, nil
}

// pick is the release strictly between lo and hi nearest the middle that was not skipped, or -1.
func pick(lo, hi int, skipped map[int]bool) int {
	m := (lo + hi) / 2
	for d := 0; m-d > lo || m+d+1 < hi; d++ {
		for _, i := range []int{m - d, m + d + 1} {
			if i > lo && i < hi && !skipped[i] {
				return i
			}
		}
	}
	return -1
}

// around names the releases nearest v, for the error of a version the list does not have.
func around(releases []string, v string) string {
	if len(releases) == 0 {
		return "it lists none"
	}
	if len(releases) <= 8 {
		return "it has " + strings.Join(releases, ", ")
	}
	return fmt.Sprintf("%d releases, %s to %s", len(releases), releases[0], releases[len(releases)-1])
}
