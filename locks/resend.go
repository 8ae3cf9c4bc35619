package locks

import (
	"context"
	"errors"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
)

// What Redisson 4.7 sends again by itself, and when. Two loops, one inside the other:
//   - the command executor resends a synced lock write (script + WAIT, one batch) whose reply did not come
//     in time, up to retryAttempts more times, on every deployment but a single server: there every lock
//     write goes through evalWriteNoRetryAsync and is never resent (CommandAsyncService.syncedEval);
//   - ServiceManager.execute repeats an acquire or an unlock that no replica acknowledged (NoSync), up to
//     retryAttempts more times; the unlock with the same request id, which its latch makes idempotent.
// Every send is recorded as its own command: each is a separate application on the server.

// resendsFor is the executor's resend count for a deployment: retryAttempts on Sentinel and Cluster,
// none on a single server.
func resendsFor(conn ClientConfig, cfg RedissonConfig) int {
	if len(conn.Sentinels) > 0 || len(conn.Cluster) > 0 {
		return max(cfg.RetryAttempts, 0)
	}
	return 0
}

// resendable is a send whose reply never came (a response timeout, a broken connection): Redis may or may
// not have applied it. A Redis error, a refusal and a NoSync are answers, and are not resent.
func resendable(err error) bool {
	return err != nil && !outcome.Definite(err) && !errors.Is(err, ErrNoSync)
}

// write records a synced lock write as the executor sends it: once, then again after each response timeout,
// up to r.resends more times, after Redisson's retry delay. A resend's record carries "resend": n.
func (r *Redisson) write(rec history.Record, run func() (*int64, bool, error)) (*int64, bool, error) {
	for n := 0; ; n++ {
		v, refused, err := record(r.rec, resendRecord(rec, "resend", n), run)
		if n >= r.resends || !resendable(err) {
			return v, refused, err
		}
		time.Sleep(r.retryDelay())
	}
}

// resendRecord is rec with args[name] = n (n > 0), on a copy of its args.
func resendRecord(rec history.Record, name string, n int) history.Record {
	if n == 0 {
		return rec
	}
	args := make(map[string]int64, len(rec.Args)+1)
	for k, v := range rec.Args {
		args[k] = v
	}
	args[name] = int64(n)
	rec.Args = args
	return rec
}

// unlockInnerFunc sends one unlock request with id; attempt counts the earlier sends with that id (a
// repeat replays the latch's answer).
type unlockInnerFunc func(ctx context.Context, id string, attempt int) (res int64, nok bool, err error)

// unlockRequest is RedissonBaseLock.unlockAsync: one request id; each execute attempt is one executor send
// (resent after a response timeout on replicated deployments), after which cancel runs (Redisson's
// cancelExpirationRenewal, once per attempt whatever it answered); a NoSync attempt is repeated after the
// retry delay, and when the last one is NoSync too the unlock fails with ErrNoSync (Redisson 4.7 throws).
// It returns the script's answer, or ErrNotHeld.
func (r *Redisson) unlockRequest(ctx context.Context, inner unlockInnerFunc, cancel func()) (int64, error) {
	ctx = context.WithoutCancel(ctx) // an unlock is never abandoned half way
	id := newRequestID()
	var (
		res   int64
		nok   bool
		err   error
		sends int
	)
	for try := 0; ; try++ {
		for n := 0; ; n++ {
			res, nok, err = inner(ctx, id, sends)
			sends++
			if n >= r.resends || !resendable(err) {
				break
			}
			time.Sleep(r.retryDelay())
		}
		cancel()
		if !errors.Is(err, ErrNoSync) || try >= r.cfg.SyncRetries {
			break
		}
		time.Sleep(r.retryDelay())
	}
	go r.dropLatches(id)
	if err == nil && nok {
		err = ErrNotHeld
	}
	return res, err
}
