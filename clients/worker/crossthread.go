package worker

import (
	"context"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workers/sdk"
)

// The cross-thread requests (docs/protocol.md): held and is_locked where the worker lists the reads cap,
// force_unlock where it lists force-unlock, and stray releases (an ordinary release from a thread that
// holds nothing) where it lists thread-bound. Each is recorded as the mutex model's command on the key:
// "held" and "is_locked" with value 1 or 0, "force_release" applied (1) when it deleted a hold and refused
// (0) when the lock was free.

var (
	_ locks.StateReader   = (*mutex)(nil)
	_ locks.ForceUnlocker = (*mutex)(nil)
	_ locks.ThreadBound   = (*mutex)(nil)
)

// plain is a single key's lock that is not a read-write lock's half: the cross-thread requests are for it.
func (l *mutex) plain() bool { return len(l.keys) == 1 && l.mode == "" }

// ReadsState reports whether the worker answers held and is_locked.
func (l *mutex) ReadsState() bool { return l.plain() && l.c.caps[sdk.CapReads] }

// ForcesUnlock reports whether the worker answers force_unlock.
func (l *mutex) ForcesUnlock() bool { return l.plain() && l.c.caps[sdk.CapForceUnlock] }

// ThreadBound reports whether the worker's library refuses a release by a thread that does not hold it.
func (l *mutex) ThreadBound() bool { return l.plain() && l.c.caps[sdk.CapThreadBound] }

// Held asks whether this thread holds the lock (isHeldByCurrentThread).
func (l *mutex) Held(context.Context) (bool, error) {
	return l.ask(sdk.TypeHeld, "held", func(m sdk.Message) *bool { return m.Held }, false)
}

// IsLocked asks whether anyone holds the lock.
func (l *mutex) IsLocked(context.Context) (bool, error) {
	return l.ask(sdk.TypeIsLocked, "is_locked", func(m sdk.Message) *bool { return m.Locked }, false)
}

// ForceUnlock asks the library to release the lock whoever holds it.
func (l *mutex) ForceUnlock(context.Context) (bool, error) {
	return l.ask(sdk.TypeForceUnlock, "force_release", func(m sdk.Message) *bool { return m.Released }, true)
}

// ask sends one cross-thread request and records it as f with the reply's answer (field) as value; with
// noRefused, a "no" is a refusal (a force_release that deleted nothing took no effect). A reply without
// the field is a malformed one, whose outcome is unknown.
func (l *mutex) ask(typ, f string, field func(sdk.Message) *bool, noRefused bool) (bool, error) {
	req := sdk.Message{Type: typ, Thread: wireThread(l.thread), Keys: l.keys}
	rec := history.Record{Client: l.c.cfg.Client, Thread: l.thread, Key: l.keys[0], Owner: l.Owner(), F: f}
	reply, ops, err := l.c.do(req, []history.Record{rec})
	if err == nil && field(reply) == nil {
		err = &Error{Client: l.c.cfg.Client, Code: sdk.CodeMalformed, Text: typ + " reply without its answer"}
	}
	if err != nil {
		settle(ops, err, false)
		return false, err
	}
	yes := *field(reply)
	for _, op := range ops {
		outcome.Answered(op, yes, nil, noRefused)
	}
	return yes, nil
}
