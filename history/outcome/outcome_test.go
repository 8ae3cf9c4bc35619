package outcome_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/redis/go-redis/v9"
)

// says is an error that says itself whether its call took no effect (a worker's error, a failed WAIT, a
// clipped error).
type says struct {
	sure bool
	err  error
}

func (e says) Error() string  { return fmt.Sprintf("says %v", e.sure) }
func (e says) Definite() bool { return e.sure }
func (e says) Unwrap() error  { return e.err }

// replyErr is a Redis error reply (go-redis's redis.Error is any error with RedisError).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// complete records c through a real Recorder and returns the completion record.
func complete(t *testing.T, f func(*history.Op) history.Type) (history.Type, history.Record) {
	t.Helper()
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, history.NewClock())
	typ := f(rec.Invoke(history.Record{Client: "c1", Key: "k", F: "acquire"}))
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d records, want an invoke and its completion:\n%s", len(lines), buf.Bytes())
	}
	var done history.Record
	if err := json.Unmarshal(lines[1], &done); err != nil {
		t.Fatal(err)
	}
	return typ, done
}

// Every case the seven copies handled (locks.record and the watchdog's renew, the workloads' release,
// complete and done, the worker's settle, the spec client's run), each with what it recorded before.
func TestComplete(t *testing.T) {
	one, minus1 := history.Int64(1), history.Int64(-1)
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	nosync := map[string]int64{"nosync": 1}
	for _, tc := range []struct {
		name  string
		call  outcome.Call
		typ   history.Type
		value *int64
		args  map[string]int64
		err   string
	}{
		{name: "answered", call: outcome.Call{}, typ: history.Ok},
		{name: "answered with value and args", call: outcome.Call{Value: one, Args: nosync}, typ: history.Ok, value: one, args: nosync},
		{name: "refused", call: outcome.Call{Refused: true}, typ: history.Fail},
		{name: "refused with value, args dropped", call: outcome.Call{Refused: true, Value: minus1, Args: nosync}, typ: history.Fail, value: minus1},
		{name: "not held", call: outcome.Call{Err: locks.ErrNotHeld, Value: minus1}, typ: history.Fail, value: minus1, err: locks.ErrNotHeld.Error()},
		{name: "not held wrapped", call: outcome.Call{Err: fmt.Errorf("%w: worker error 40", locks.ErrNotHeld)}, typ: history.Fail, err: "not held by this owner: worker error 40"},
		{name: "not held under an error that says indefinite", call: outcome.Call{Err: says{false, locks.ErrNotHeld}}, typ: history.Fail, err: "says false"},
		{name: "subscribe error", call: outcome.Call{Err: &locks.SubscribeError{Channel: "ch", Err: io.EOF}}, typ: history.Fail, err: "subscribe ch: EOF"},
		{name: "subscribe error under a timeout", call: outcome.Call{Err: fmt.Errorf("%w; %w", context.DeadlineExceeded, &locks.SubscribeError{Channel: "ch", Err: io.EOF})}, typ: history.Fail, err: "context deadline exceeded; subscribe ch: EOF"},
		{name: "says definite", call: outcome.Call{Err: says{true, nil}}, typ: history.Fail, err: "says true"},
		{name: "says definite, value kept (locks.record)", call: outcome.Call{Err: says{true, nil}, Value: history.Int64(0)}, typ: history.Fail, value: history.Int64(0), err: "says true"},
		{name: "says indefinite", call: outcome.Call{Err: says{false, nil}}, typ: history.Unknown, err: "says false"},
		{name: "says indefinite over a Redis error (WaitError)", call: outcome.Call{Err: says{false, replyErr("ERR x")}}, typ: history.Unknown, err: "says false"},
		{name: "unknown drops value and args", call: outcome.Call{Err: says{false, nil}, Value: one, Args: nosync}, typ: history.Unknown, err: "says false"},
		{name: "pool timeout", call: outcome.Call{Err: redis.ErrPoolTimeout}, typ: history.Fail, err: redis.ErrPoolTimeout.Error()},
		{name: "closed client", call: outcome.Call{Err: redis.ErrClosed}, typ: history.Fail, err: redis.ErrClosed.Error()},
		{name: "redis error reply", call: outcome.Call{Err: replyErr("NOSCRIPT no script")}, typ: history.Fail, err: "NOSCRIPT no script"},
		{name: "redis nil", call: outcome.Call{Err: redis.Nil}, typ: history.Fail, err: "redis: nil"},
		{name: "redis error that timed out", call: outcome.Call{Err: fmt.Errorf("%w: %w", replyErr("ERR"), context.DeadlineExceeded)}, typ: history.Unknown, err: "ERR: context deadline exceeded"},
		{name: "refused dial", call: outcome.Call{Err: dial}, typ: history.Fail, err: dial.Error()},
		{name: "broken read", call: outcome.Call{Err: read}, typ: history.Unknown, err: read.Error()},
		{name: "deadline", call: outcome.Call{Err: context.DeadlineExceeded}, typ: history.Unknown, err: "context deadline exceeded"},
		{name: "cancelled", call: outcome.Call{Err: context.Canceled}, typ: history.Unknown, err: "context canceled"},
		{name: "eof", call: outcome.Call{Err: io.EOF}, typ: history.Unknown, err: "EOF"},
		{name: "unexpected reply", call: outcome.Call{Err: errors.New("renew: unexpected reply [2]")}, typ: history.Unknown, err: "renew: unexpected reply [2]"},
		{name: "an error overrides refused", call: outcome.Call{Err: io.EOF, Refused: true}, typ: history.Unknown, err: "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcome.Of(tc.call); got != tc.typ {
				t.Errorf("Of = %s, want %s", got, tc.typ)
			}
			if got := outcome.Definite(tc.call.Err); got != (tc.typ != history.Unknown) {
				t.Errorf("Definite = %v, want %v", got, tc.typ != history.Unknown)
			}
			typ, done := complete(t, func(op *history.Op) history.Type { return outcome.Complete(op, tc.call) })
			checkRecord(t, typ, done, tc.typ, tc.value, tc.args, tc.err)
		})
	}
}

// Answered is the cross-thread reads' and force-unlock's completion: a yes/no as value 1 or 0.
func TestAnswered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		yes       bool
		err       error
		noRefused bool
		typ       history.Type
		value     *int64
	}{
		{name: "yes", yes: true, typ: history.Ok, value: history.Int64(1)},
		{name: "no", typ: history.Ok, value: history.Int64(0)},
		{name: "yes, force", yes: true, noRefused: true, typ: history.Ok, value: history.Int64(1)},
		{name: "no, force: took no effect", noRefused: true, typ: history.Fail, value: history.Int64(0)},
		{name: "definite error", err: redis.ErrClosed, noRefused: true, typ: history.Fail},
		{name: "indefinite error", yes: true, err: io.EOF, typ: history.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, done := complete(t, func(op *history.Op) history.Type { return outcome.Answered(op, tc.yes, tc.err, tc.noRefused) })
			errText := ""
			if tc.err != nil {
				errText = tc.err.Error()
			}
			checkRecord(t, typ, done, tc.typ, tc.value, nil, errText)
		})
	}
}

func checkRecord(t *testing.T, typ history.Type, done history.Record, want history.Type, value *int64, args map[string]int64, err string) {
	t.Helper()
	if typ != want || done.Type != want {
		t.Errorf("returned %s, recorded %s; want %s", typ, done.Type, want)
	}
	if (done.Value == nil) != (value == nil) || value != nil && *done.Value != *value {
		t.Errorf("value %v, want %v", ptr(done.Value), ptr(value))
	}
	if fmt.Sprint(done.Args) != fmt.Sprint(args) && len(done.Args)+len(args) > 0 {
		t.Errorf("args %v, want %v", done.Args, args)
	}
	if done.Error != err {
		t.Errorf("error %q, want %q", done.Error, err)
	}
}

func ptr(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}
