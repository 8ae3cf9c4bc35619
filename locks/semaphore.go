package locks

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/redis/go-redis/v9"
)

// RSemaphore is Redisson's semaphore: a string holding the available permits, released by anyone.
type RSemaphore struct {
	r       *Redisson
	name    string
	thread  int64
	release string // "sem_release", or the broken one without a bound
}

var _ Semaphore = (*RSemaphore)(nil)

// trySetSynced is trySet for a semaphore's trySetPermits, which Redisson sends as a synced write and
// repeats on NoSync (syncedEvalWithRetry): a repeat after an applied set answers 0, and when the last
// send is NoSync too the call fails with ErrNoSync.
func trySetSynced(ctx context.Context, r *Redisson, rec history.Record, script string, keys []string, args ...any) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	for try := 0; ; try++ {
		_, refused, err := r.write(resendRecord(rec, "retry", try), func() (*int64, bool, error) {
			res, err := r.eval(ctx, script, keys, args...)
			n, ok := res.(int64)
			if !ok {
				return nil, false, err
			}
			return history.Int64(n), n == 0, err
		})
		if !errors.Is(err, ErrNoSync) || try >= r.cfg.SyncRetries || !sleepCtx(ctx, r.retryDelay()) {
			return err == nil && !refused, err
		}
	}
}

// Semaphore returns the RSemaphore called name.
func (r *Redisson) Semaphore(name string, thread int64, broken bool) *RSemaphore {
	return &RSemaphore{r: r, name: name, thread: thread, release: variant("sem_release", broken)}
}

func (s *RSemaphore) channel() string { return prefixName("redisson_sc", s.name) }

func (s *RSemaphore) op(f string, args map[string]int64) history.Record {
	return history.Record{Client: s.r.name, Node: s.r.node, Thread: s.thread, Key: s.name,
		Owner: s.r.ID + ":" + strconv.FormatInt(s.thread, 10), F: f, Args: args}
}

// TrySetPermits sets the number of permits if it was never set.
func (s *RSemaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	return trySetSynced(ctx, s.r, s.op("setPermits", msArgs("permits", n)), "sem_try_set", []string{s.name, s.channel()},
		n, s.r.publish())
}

// trySet runs a set-once script that answers 1 (set) or 0 (already set).
func trySet(ctx context.Context, r *Redisson, rec history.Record, script string, keys []string, args ...any) (bool, error) {
	_, refused, err := record(r.rec, rec, func() (*int64, bool, error) {
		n, err := r.scripts.Get(script).Run(context.WithoutCancel(ctx), r.rdb, keys, args...).Int64()
		if err != nil {
			return nil, false, err
		}
		return history.Int64(n), n == 0, nil
	})
	return err == nil && !refused, err
}

// TryAcquire takes n permits, waiting up to wait for releases (published with the new count).
func (s *RSemaphore) TryAcquire(ctx context.Context, n int64, wait time.Duration) (bool, error) {
	return s.r.waitFor(ctx, s.channel(), wakeSemaphore, wait, func(ctx context.Context) (bool, int64, error) {
		ok, err := s.tryAcquire(ctx, n)
		return ok, -1, err
	}, nil)
}

// tryAcquire runs the acquire script once. On NoSync Redisson releases n permits, whether or not the
// script took any (the result is discarded), and tries again.
func (s *RSemaphore) tryAcquire(ctx context.Context, n int64) (bool, error) {
	for attempt := 0; ; attempt++ {
		_, refused, err := s.r.write(s.op("acquire", msArgs("permits", n)), func() (*int64, bool, error) {
			res, err := s.r.eval(ctx, "sem_acquire", []string{s.name}, n)
			v, _ := res.(int64)
			return history.Int64(v), v == 0 && res != nil, err
		})
		if errors.Is(err, ErrNoSync) {
			_ = s.Release(ctx, n)
			if attempt >= s.r.cfg.SyncRetries || !sleepCtx(ctx, s.r.retryDelay()) {
				return false, err
			}
			continue
		}
		return err == nil && !refused, err
	}
}

// Release returns n permits. A NoSync is not repeated and fails the call (RedissonSemaphore.releaseAsync
// throws it); a response timeout is resent on replicated deployments, so a release can apply twice.
func (s *RSemaphore) Release(ctx context.Context, n int64) error {
	_, _, err := s.r.write(s.op("release", msArgs("permits", n)), func() (*int64, bool, error) {
		res, err := s.r.eval(context.WithoutCancel(ctx), s.release, []string{s.name, s.channel()}, n, s.r.publish())
		v, ok := res.(int64)
		if !ok {
			return nil, false, err
		}
		return history.Int64(v), false, err
	})
	return err
}

// Available reads the permit count (a missing key is 0).
func (s *RSemaphore) Available(ctx context.Context) (int64, error) {
	return readCount(ctx, s.r, s.op("available", nil), func(ctx context.Context) (int64, error) {
		n, err := s.r.rdb.Get(ctx, s.name).Int64()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return n, err
	})
}

// readCount records one read of a number.
func readCount(ctx context.Context, r *Redisson, rec history.Record, read func(context.Context) (int64, error)) (int64, error) {
	v, _, err := record(r.rec, rec, func() (*int64, bool, error) {
		n, err := read(context.WithoutCancel(ctx))
		if err != nil {
			return nil, false, err
		}
		return history.Int64(n), false, nil
	})
	if err != nil {
		return -1, err
	}
	return *v, nil
}
