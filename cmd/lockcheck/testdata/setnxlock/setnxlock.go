// Package setnxlock is the lock of the test workers (testdata/myworker, testdata/leaseworker): SET NX PX
// polled until it wins or the wait runs out, release by compare-and-delete, extend by compare-and-pexpire.
package setnxlock

import (
	"context"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

// The scripts' texts, as a library lockcheck knows words them (clients/worker/wire.go's naive worker).
const (
	DelText    = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
	ExtendText = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`
)

// Lock is one worker's lock: owner is its client, the thread is appended.
type Lock struct {
	RDB                     *redis.Client
	Owner                   string
	Lease                   time.Duration // sent for an acquire without one
	DelScript, ExtendScript *redis.Script
}

// New is a lock with the scripts above.
func New(rdb *redis.Client, owner string, lease time.Duration) *Lock {
	return &Lock{RDB: rdb, Owner: owner, Lease: lease, DelScript: redis.NewScript(DelText),
		ExtendScript: redis.NewScript(ExtendText)}
}

func (l *Lock) value(thread int64) string { return fmt.Sprintf("%s:%d", l.Owner, thread) }

// Acquire polls SET NX PX.
func (l *Lock) Acquire(ctx context.Context, thread int64, keys []string, wait, lease time.Duration) (sdk.Grant, error) {
	if lease <= 0 {
		lease = l.Lease
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := l.RDB.SetNX(ctx, keys[0], l.value(thread), lease).Result()
		if err != nil || ok {
			return sdk.Grant{Granted: ok}, err
		}
		if time.Now().After(deadline) {
			return sdk.Grant{}, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Release deletes the key while it holds the owner's value.
func (l *Lock) Release(ctx context.Context, thread int64, keys []string) error {
	n, err := l.DelScript.Run(ctx, l.RDB, keys[:1], l.value(thread)).Int64()
	if err == nil && n == 0 {
		return sdk.ErrNotHeld
	}
	return err
}

// Extend sets a new lease while the key holds the owner's value.
func (l *Lock) Extend(ctx context.Context, thread int64, keys []string, lease time.Duration) (bool, error) {
	n, err := l.ExtendScript.Run(ctx, l.RDB, keys[:1], l.value(thread), lease.Milliseconds()).Int64()
	return n == 1, err
}
