package runner

import (
	"context"
	"sync/atomic"

	"github.com/lockcheck/lockcheck/history"
)

// active is the recorder of the run in progress, for Abandon.
var active atomic.Pointer[history.Recorder]

// writeEnd writes the history's end record: interrupted (naming the signal), failed (naming the error) or
// completed. The checker trusts a history as complete only when this record says so.
func writeEnd(ctx context.Context, rec *history.Recorder, runErr error) {
	switch {
	case ctx.Err() != nil:
		rec.End(history.EndInterrupted, context.Cause(ctx).Error())
	case runErr != nil:
		rec.End(history.EndFailed, runErr.Error())
	default:
		rec.End(history.EndCompleted, "")
	}
}

// Abandon ends the history of the run in progress, if any, as interrupted with why, for a lockcheck that
// is about to exit without finishing its teardown (a second Ctrl-C). Records after it are dropped.
func Abandon(why string) {
	if rec := active.Load(); rec != nil {
		rec.End(history.EndInterrupted, why)
	}
}
