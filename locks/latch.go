package locks

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/redis/go-redis/v9"
)

// CountDownLatch is Redisson's RCountDownLatch: a string count; a missing key is an open latch.
type CountDownLatch struct {
	r         *Redisson
	name      string
	thread    int64
	countDown string // "latch_count_down", or the broken one that counts twice
}

var _ Latch = (*CountDownLatch)(nil)

// CountDownLatch returns the latch called name.
func (r *Redisson) CountDownLatch(name string, thread int64, broken bool) *CountDownLatch {
	return &CountDownLatch{r: r, name: name, thread: thread, countDown: variant("latch_count_down", broken)}
}

// The channel is built by concatenation, not prefixName, in Redisson.
func (l *CountDownLatch) channel() string {
	return "redisson_countdownlatch__channel__{" + l.name + "}"
}

func (l *CountDownLatch) op(f string, args map[string]int64) history.Record {
	return history.Record{Client: l.r.name, Node: l.r.node, Thread: l.thread, Key: l.name,
		Owner: l.r.ID + ":" + strconv.FormatInt(l.thread, 10), F: f, Args: args}
}

// TrySetCount sets the count on an open latch.
func (l *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	return trySet(ctx, l.r, l.op("setCount", msArgs("count", n)), "latch_try_set", []string{l.name, l.channel()},
		"1", n, l.r.publish())
}

// CountDown decrements the count once; it is never retried (Redisson 3.16.4+, #3850).
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	_, _, err := record(l.r.rec, l.op("countDown", nil), func() (*int64, bool, error) {
		v, err := l.r.scripts.Get(l.countDown).Run(context.WithoutCancel(ctx), l.r.rdb, []string{l.name, l.channel()},
			"0", l.r.publish()).Int64()
		if err != nil {
			return nil, false, err
		}
		return history.Int64(v), false, nil
	})
	return err
}

// Count reads the count (a missing key is 0).
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	return readCount(ctx, l.r, l.op("getCount", nil), func(ctx context.Context) (int64, error) {
		n, err := l.r.rdb.Get(ctx, l.name).Int64()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return n, err
	})
}

// Await returns true once the count reads zero, waiting on the zero message up to wait.
func (l *CountDownLatch) Await(ctx context.Context, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	n, err := l.Count(ctx)
	if err != nil || n == 0 {
		return err == nil, err
	}
	e, err := l.r.subscribe(context.WithoutCancel(ctx), l.channel(), wakeLatch)
	if err != nil {
		return false, err
	}
	defer l.r.subs.unsubscribe(e)
	for {
		if n, err = l.Count(ctx); err != nil || n == 0 {
			return err == nil, err
		}
		if time.Until(deadline) <= 0 || ctx.Err() != nil {
			return false, nil
		}
		e.wait(ctx, time.Until(deadline))
	}
}
