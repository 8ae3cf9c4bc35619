package runner

import (
	"context"
	"fmt"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// runCheckers runs the checkers. When no timeline will be drawn, porcupine (first) lets go of what it kept
// for the timeline before the others run: for a million operations, 350 MB no one would read.
func runCheckers(ctx context.Context, h *history.History, lin *checker.Linearizable, cs []checker.Checker, noTimeline bool) ([]checker.Result, checker.Validity) {
	if !noTimeline || len(cs) == 0 || cs[0] != checker.Checker(lin) {
		return checker.Run(ctx, h, cs...)
	}
	lin.NoTimeline = true
	first, v1 := checker.Run(ctx, h, lin)
	*lin = checker.Linearizable{}
	rest, v2 := checker.Run(ctx, h, cs[1:]...)
	return append(first, rest...), checker.Worst(v1, v2)
}

// maxTimeline bounds the operations history.html draws: porcupine's timeline of a million operations is a
// 230 MB page no browser opens, and building it took more memory and time than the whole check.
var maxTimeline = 200_000

// tooLongForTimeline says why a history gets no HTML, or "".
func tooLongForTimeline(h *history.History) string {
	if n := len(h.Ops); n > maxTimeline {
		return fmt.Sprintf("no HTML: %d operations are more than the timeline draws (%d); results.json holds every verdict", n, maxTimeline)
	}
	return ""
}
