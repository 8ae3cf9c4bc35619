package locks

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/outcome"
	"github.com/redis/go-redis/v9"
)

// MultiLock is Redisson's RMultiLock (and, with a quorum, its RedLock): it holds several RLocks, which may
// live on different masters, all or nothing. It has no script of its own.
type MultiLock struct {
	name  string // for records: the group's keys joined
	locks []*RLock
	// failedLimit is how many members may fail: 0 for MultiLock, n-(n/2+1) for RedLock.
	failedLimit int
	redlock     bool
	// Defects of the negative controls.
	keepPartial bool // on failure, keep the members already acquired
	shuffle     bool // try members in a random order (with a minority quorum: two clients each win some)
	rng         *rand.Rand
}

var _ Mutex = (*MultiLock)(nil)

// NewMultiLock groups locks as RMultiLock does: every member must be acquired.
func NewMultiLock(locks ...*RLock) *MultiLock {
	names := make([]string, len(locks))
	for i, l := range locks {
		names[i] = l.name
	}
	return &MultiLock{name: strings.Join(names, ","), locks: locks}
}

// NewRedLock groups one RLock per independent master as RedissonRedLock does: a majority suffices, each
// member waits at most remaining/n, there is no validity check and unlock releases every member.
func NewRedLock(locks ...*RLock) *MultiLock {
	m := NewMultiLock(locks...)
	m.name, m.redlock = locks[0].name, true
	m.failedLimit = len(locks) - (len(locks)/2 + 1)
	return m
}

// Key is the group's name.
func (m *MultiLock) Key() string { return m.name }

// Owner is the first member's owner (each member's own is <its client's uuid>:<thread>).
func (m *MultiLock) Owner() string { return m.locks[0].Owner() }

// Keys lists the member keys.
func (m *MultiLock) Keys() []string {
	out := make([]string, len(m.locks))
	for i, l := range m.locks {
		out[i] = l.name
	}
	return out
}

func (m *MultiLock) lockWait(remain time.Duration) time.Duration {
	if m.redlock {
		return max(remain/time.Duration(len(m.locks)), time.Millisecond)
	}
	return remain
}

// TryLock follows RedissonMultiLock.tryLock(wait, lease): members in order; a failure beyond the limit
// releases what was taken and starts over while time remains; on success with a lease every member gets an
// unconditional PEXPIRE.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	newLease := time.Duration(0)
	if lease > 0 {
		newLease = lease
		if wait > 0 {
			newLease = 2 * wait
		}
	}
	order := m.locks
	if m.shuffle {
		order = append([]*RLock(nil), m.locks...)
		m.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	remain := wait
	lockWait := m.lockWait(remain)
	limit := m.failedLimit
	var acquired []*RLock
	for i := 0; i < len(order); i++ {
		l := order[i]
		start := time.Now()
		var ok bool
		var err error
		if wait <= 0 && lease <= 0 {
			ok, err = l.TryLock(ctx, 0, 0)
		} else {
			ok, err = l.TryLock(ctx, min(lockWait, remain), newLease)
		}
		if err != nil && !outcome.Definite(err) {
			m.release(ctx, []*RLock{l}) // a timed-out member may hold: undo it (Redisson unlockInner)
			ok = false
		}
		if ok {
			acquired = append(acquired, l)
		} else {
			if len(order)-len(acquired) == m.failedLimit {
				break
			}
			if limit == 0 {
				if !m.keepPartial {
					m.release(ctx, acquired)
				}
				if wait <= 0 || ctx.Err() != nil {
					return false, nil
				}
				limit, acquired, i = m.failedLimit, nil, -1
			} else {
				limit--
			}
		}
		if wait > 0 {
			remain -= time.Since(start)
			if remain <= 0 {
				if !m.keepPartial {
					m.release(ctx, acquired)
				}
				return false, nil
			}
		}
	}
	if lease > 0 {
		for _, l := range acquired {
			l.expire(ctx, lease)
		}
	}
	return true, nil
}

// Lock blocks until every member is held, as RedissonMultiLock.lockInterruptibly does: rounds of
// tryLock(wait, lease) where wait is locks × 1500 ms without a lease, and with one a random time in
// [lease/2, lease) (or [locks × 1500 ms, lease) when the lease is longer). ctx ends it.
func (m *MultiLock) Lock(ctx context.Context, lease time.Duration) error {
	base := time.Duration(len(m.locks)) * 1500 * time.Millisecond
	for ctx.Err() == nil {
		wait := base
		if lease > 0 {
			lo := lease / 2
			if lease > base {
				lo = base
			}
			wait = lo + time.Duration(rand.Int64N(int64(max(lease-lo, 1))))
		}
		ok, err := m.TryLock(ctx, wait, lease)
		if err != nil || ok {
			return err
		}
	}
	return ctx.Err()
}

// release unlocks members, swallowing errors (RedissonMultiLock.unlockInner).
func (m *MultiLock) release(ctx context.Context, ls []*RLock) {
	for _, l := range ls {
		_ = l.Unlock(ctx)
	}
}

// Unlock releases every member. MultiLock stops at the first member whose unlock fails in any way
// (Redisson's forEach(Lock::unlock)): the members after it stay held, and renewed; RedLock releases them
// all and swallows errors.
func (m *MultiLock) Unlock(ctx context.Context) error {
	for _, l := range m.locks {
		if err := l.Unlock(ctx); err != nil && !m.redlock {
			return err
		}
	}
	return nil
}

// expire is RedissonExpirable.expireAsync: PEXPIRE with no owner check, recorded as "expire".
func (l *RLock) expire(ctx context.Context, lease time.Duration) {
	_, _, _ = record(l.r.rec, l.op("expire", msArgs("lease_ms", lease)), func() (*int64, bool, error) {
		ok, err := l.r.rdb.PExpire(context.WithoutCancel(ctx), l.name, lease).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, false, err
		}
		if !ok {
			return history.Int64(0), true, nil
		}
		return history.Int64(1), false, nil
	})
}
