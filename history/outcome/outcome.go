// Package outcome turns what one call returned (an answer, a refusal, an error) into its completion
// record: ok, fail (it surely took no effect) or unknown (it may have). Every client that records
// operations (the Go locks, the workloads, the worker driver, the spec locks) completes them here, so one
// rule decides what an error proves.
package outcome

import (
	"context"
	"errors"
	"net"

	"github.com/lockcheck/lockcheck/history"
	"github.com/redis/go-redis/v9"
)

// Call is what one call returned.
type Call struct {
	Err     error            // nil when an answer came
	Refused bool             // the answer says the call took no effect
	Value   *int64           // recorded with ok and fail, as given (a caller with no number leaves it nil)
	Args    map[string]int64 // facts learnt while it ran (nosync, try_at), recorded with ok only
}

// Of is the completion type of c: an answer is ok, or fail when refused; an error is fail when it proves
// the call did not run (Definite), else unknown.
func Of(c Call) history.Type {
	switch {
	case c.Err == nil && !c.Refused:
		return history.Ok
	case c.Err == nil, Definite(c.Err):
		return history.Fail
	}
	return history.Unknown
}

// Complete records c as op's completion and returns its type.
func Complete(op *history.Op, c Call) history.Type {
	t := Of(c)
	op.Complete(t, c.Value, c.Args, c.Err)
	return t
}

// Answered completes op with a yes/no answer, recorded as value 1 or 0; with noRefused, a no took no
// effect (a force-unlock that found the lock free) and fails. An error completes it as Complete does.
func Answered(op *history.Op, yes bool, err error, noRefused bool) history.Type {
	if err != nil {
		return Complete(op, Call{Err: err})
	}
	v := int64(0)
	if yes {
		v = 1
	}
	return Complete(op, Call{Value: &v, Refused: !yes && noRefused})
}

// NoEffect is an error that proves its call took no effect wherever it stands in a chain of wrapped
// errors, even under one that says otherwise: a refusal told as an error (not held), a wait that gave up
// before it could subscribe.
type NoEffect interface {
	error
	NoEffect()
}

// Refusal is a NoEffect error with text, for a sentinel compared with errors.Is (locks.ErrNotHeld).
func Refusal(text string) error { return &refusal{text} }

type refusal struct{ text string }

func (e *refusal) Error() string { return e.text }
func (e *refusal) NoEffect()     {}

// Definite reports whether err proves that a call did not run (so its operation failed rather than ended
// unknown). In order: no error, or a NoEffect anywhere in the chain, is definite; then the first error
// in the chain with a Definite method says itself (an out-of-process worker's error, a failed WAIT, a
// clipped error); then a Redis error reply (but not one that also timed out), a refused dial or an
// exhausted or closed pool never ran. A timeout, a cancelled context or a broken connection may have.
func Definite(err error) bool {
	var ne NoEffect
	if err == nil || errors.As(err, &ne) {
		return true
	}
	var d interface{ Definite() bool }
	if errors.As(err, &d) {
		return d.Definite()
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var nerr *net.OpError
	if errors.As(err, &nerr) && nerr.Op == "dial" {
		return true
	}
	return false
}
