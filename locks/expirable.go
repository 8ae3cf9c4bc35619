package locks

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// noLease is Redisson's score for a permit without a lease (nonExpirableTimeout).
const noLease = 922337203685477

// PermitSemaphore is Redisson's RPermitExpirableSemaphore: available permits in a string, issued permit
// ids in a zset scored by their deadline in client epoch ms, expired permits reclaimed lazily by whichever
// script runs next, by its caller's clock. An id is 32 hex characters to the caller and in the history, and
// its 16 raw bytes in Redis, as Redisson sends it (decodeHexDump), so either client can release the
// other's permits.
type PermitSemaphore struct {
	r       *Redisson
	name    string
	thread  int64
	acquire string // "pes_acquire", or the broken one that over-issues
}

var _ Expirable = (*PermitSemaphore)(nil)

// PermitExpirableSemaphore returns the semaphore called name.
func (r *Redisson) PermitExpirableSemaphore(name string, thread int64, broken bool) *PermitSemaphore {
	return &PermitSemaphore{r: r, name: name, thread: thread, acquire: variant("pes_acquire", broken)}
}

func (p *PermitSemaphore) channel() string  { return prefixName("redisson_sc", p.name) }
func (p *PermitSemaphore) timeouts() string { return suffixName(p.name, "timeout") }

// op records a command; the permit id stands in the owner field.
func (p *PermitSemaphore) op(f, id string, args map[string]int64) history.Record {
	return history.Record{Client: p.r.name, Node: p.r.node, Thread: p.thread, Key: p.name, Owner: id, F: f, Args: args}
}

// TrySetPermits sets the number of permits if it was never set.
func (p *PermitSemaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	return trySetSynced(ctx, p.r, p.op("setPermits", "", msArgs("permits", n)), "sem_try_set",
		[]string{p.name, p.channel()}, n, p.r.publish())
}

// TryAcquire takes one permit with a lease (0: none), waiting up to wait; it returns the permit id.
func (p *PermitSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, error) {
	var id string
	ok, err := p.r.waitFor(ctx, p.channel(), wakeSemaphore, wait, func(ctx context.Context) (bool, int64, error) {
		got, next, err := p.tryAcquire(ctx, lease)
		id = got
		ttl := int64(-1)
		if next > 0 {
			ttl = next.Milliseconds()
		}
		return got != "", ttl, err
	}, nil)
	if !ok {
		id = ""
	}
	return id, err
}

// tryAcquire runs the acquire script once; next is how long until the nearest permit deadline, if any.
func (p *PermitSemaphore) tryAcquire(ctx context.Context, lease time.Duration) (string, time.Duration, error) {
	id := newRequestID()
	for attempt := 0; ; attempt++ {
		now := p.r.now().UnixMilli()
		until := int64(noLease)
		if lease > 0 {
			until = now + lease.Milliseconds()
		}
		var next time.Duration
		_, refused, err := p.r.write(p.op("acquire", id, msArgs("lease_ms", lease)), func() (*int64, bool, error) {
			res, err := p.r.eval(ctx, p.acquire, []string{p.name, p.timeouts(), p.channel()},
				1, until, now, int64(noLease), p.r.publish(), p.permitID(id))
			switch v := res.(type) {
			case string:
				if ts, ok := strings.CutPrefix(v, ":"); ok {
					at, _ := strconv.ParseInt(ts, 10, 64)
					next = time.Duration(at-now) * time.Millisecond
					return history.Int64(0), true, err
				}
				return nil, false, err // OK
			case nil:
				if err == nil {
					return history.Int64(0), true, nil
				}
			}
			return nil, false, err
		})
		if errors.Is(err, ErrNoSync) {
			if !refused {
				_, _ = p.Release(ctx, id)
			}
			if attempt >= p.r.cfg.SyncRetries || !sleepCtx(ctx, p.r.retryDelay()) {
				return "", 0, err
			}
			continue
		}
		if err != nil || refused {
			return "", next, err
		}
		return id, 0, nil
	}
}

// Release returns a permit by id; false means it had expired (or was never issued, or an earlier send of
// this release applied). As Redisson's tryRelease (syncedEvalWithRetry): a NoSync is repeated with the same
// id, up to SyncRetries times, and fails the call when the last send is NoSync too.
func (p *PermitSemaphore) Release(ctx context.Context, id string) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	for try := 0; ; try++ {
		_, refused, err := p.r.write(resendRecord(p.op("release", id, nil), "retry", try), func() (*int64, bool, error) {
			res, err := p.r.eval(ctx, "pes_release", []string{p.name, p.channel(), p.timeouts()},
				p.permitID(id), 1, p.r.now().UnixMilli(), p.r.publish())
			v, ok := res.(int64)
			if !ok {
				return nil, false, err
			}
			return history.Int64(v), v == 0, err
		})
		if !errors.Is(err, ErrNoSync) || try >= p.r.cfg.SyncRetries || !sleepCtx(ctx, p.r.retryDelay()) {
			return err == nil && !refused, err
		}
	}
}

// permitID is the zset member of the permit id (hex): its raw bytes. An id that is not hex (a caller's
// own) goes as it is.
func (p *PermitSemaphore) permitID(id string) string {
	b, err := hex.DecodeString(id)
	if err != nil {
		return id
	}
	return string(b)
}

// Available reclaims expired permits and reads how many are available.
func (p *PermitSemaphore) Available(ctx context.Context) (int64, error) {
	return readCount(ctx, p.r, p.op("available", "", nil), func(ctx context.Context) (int64, error) {
		return p.r.scripts.Get("pes_available").Run(ctx, p.r.rdb, []string{p.name, p.timeouts(), p.channel()},
			p.r.now().UnixMilli(), p.r.publish()).Int64()
	})
}
