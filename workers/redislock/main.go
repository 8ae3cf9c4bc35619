//go:build ignore

// Command worker drives github.com/bsm/redislock for lockcheck over LCP/1 (docs/protocol.md). It compiles
// against the releases on go-redis v9 (v0.9.0 on), using only the API they share: Obtain with a
// RetryStrategy, Lock.Refresh, Lock.Release, ErrNotObtained and ErrLockNotHeld.
package main

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

const module = "github.com/bsm/redislock"

// holdKey: redislock ties a lock to the token in its *Lock, so one *Lock per (thread, key).
type holdKey struct {
	thread int64
	key    string
}

type worker struct {
	client  redis.UniversalClient
	locker  *redislock.Client
	lease   time.Duration // for lease_ms 0
	backoff time.Duration // LinearBackoff between tries of one Obtain
	timeout time.Duration // options.timeout_ms

	mu    sync.Mutex
	holds map[holdKey]*held
}

type held struct {
	lock  *redislock.Lock
	lease time.Duration
}

func main() {
	w := &worker{holds: map[holdKey]*held{}}
	serve(os.Stdin, w.init, w.handle)
	if w.client != nil {
		_ = w.client.Close()
	}
}

// libraryVersion is the version the binary was linked with, from its own build information.
func libraryVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == module {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

func (w *worker) init(req *request) (map[string]any, *protoError) {
	kinds := []string{"redislock", "mutex"}
	if req.Protocol != 1 {
		return nil, fail(codeNotSupported, "protocol %d: this worker speaks LCP/1", req.Protocol)
	}
	if req.Lock.Family != "mutex" || (req.Lock.Kind != "redislock" && req.Lock.Kind != "mutex") {
		return nil, fail(codeNotSupported, "lock %s (family %s): redislock is a mutex; kinds %v", req.Lock.Kind, req.Lock.Family, kinds)
	}
	o := req.Options
	switch {
	case o.LeaseMS > 0:
		w.lease = time.Duration(o.LeaseMS) * time.Millisecond
	case o.WatchdogMS > 0:
		w.lease = time.Duration(o.WatchdogMS) * time.Millisecond
	default:
		w.lease = 10 * time.Second
	}
	w.timeout = time.Duration(o.TimeoutMS) * time.Millisecond
	w.backoff = 50 * time.Millisecond
	for k, v := range req.LibraryOptions {
		switch k {
		case "backoffMs":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fail(codeMalformed, "library option backoffMs=%q: want a positive integer", v)
			}
			w.backoff = time.Duration(n) * time.Millisecond
		default:
			return nil, fail(codeNotSupported, "library option %q: this worker knows backoffMs", k)
		}
	}
	t := req.Topology
	// Announced addresses (Sentinel's answers) go through nat to this client's own proxies.
	dialer := &net.Dialer{Timeout: w.timeout}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := t.NAT[addr]; ok {
			addr = to
		}
		return dialer.DialContext(ctx, network, addr)
	}
	switch t.Kind {
	case "single":
		if len(t.Nodes) == 0 {
			return nil, fail(codeMalformed, "topology single has no nodes")
		}
		w.client = redis.NewClient(&redis.Options{Addr: t.Nodes[0].Addr, Password: req.Password, Dialer: dial,
			DialTimeout: w.timeout, ReadTimeout: w.timeout, WriteTimeout: w.timeout})
	case "sentinel":
		if len(t.Sentinels) == 0 || t.MasterName == "" {
			return nil, fail(codeMalformed, "topology sentinel needs sentinels and master_name")
		}
		w.client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: t.MasterName, SentinelAddrs: t.Sentinels,
			Password: req.Password, SentinelPassword: req.Password, Dialer: dial,
			DialTimeout: w.timeout, ReadTimeout: w.timeout, WriteTimeout: w.timeout})
	default:
		return nil, fail(codeNotSupported, "topology %q: redislock locks one logical Redis; this worker runs on single or sentinel", t.Kind)
	}
	w.locker = redislock.New(w.client)
	return map[string]any{"library": "redislock", "version": libraryVersion(), "runtime": runtime.Version(),
		"kinds": kinds, "caps": []string{"extend"}}, nil
}

func (w *worker) handle(req *request) (map[string]any, *protoError) {
	if req.Thread <= 0 {
		return nil, fail(codeMalformed, "%s: thread must be a positive integer", req.Type)
	}
	if req.Mode != "" {
		return nil, fail(codeNotSupported, "%s: mode %q: redislock has no read-write lock", req.Type, req.Mode)
	}
	switch req.Type {
	case "acquire", "release", "extend":
	default:
		return nil, fail(codeNotSupported, "request %q: the redislock worker does acquire, release, extend", req.Type)
	}
	if len(req.Keys) != 1 {
		return nil, fail(codeNotSupported, "%s: %d keys: this worker drives Obtain on one key", req.Type, len(req.Keys))
	}
	hk := holdKey{req.Thread, req.Keys[0]}
	switch req.Type {
	case "acquire":
		return w.acquire(req, hk)
	case "release":
		return w.release(hk)
	default:
		return w.extend(req, hk)
	}
}

func (w *worker) held(hk holdKey) *held {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holds[hk]
}

func (w *worker) drop(hk holdKey, h *held) {
	w.mu.Lock()
	if w.holds[hk] == h {
		delete(w.holds, hk)
	}
	w.mu.Unlock()
}

// acquire waits by retrying: LinearBackoff limited to wait_ms/backoff retries, so that running out of
// tries is the library's ErrNotObtained. The context's deadline is only a backstop well past that: it
// can cut a command short, and so its expiry is indefinite.
func (w *worker) acquire(req *request, hk holdKey) (map[string]any, *protoError) {
	lease := w.lease
	if req.LeaseMS > 0 {
		lease = time.Duration(req.LeaseMS) * time.Millisecond
	}
	wait := time.Duration(req.WaitMS) * time.Millisecond
	retry := redislock.NoRetry()
	if n := int(wait / w.backoff); n > 0 {
		retry = redislock.LimitRetry(redislock.LinearBackoff(w.backoff), n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*w.timeout+5*time.Second)
	defer cancel()
	lock, err := w.locker.Obtain(ctx, hk.key, lease, &redislock.Options{RetryStrategy: retry})
	switch {
	case err == nil:
		w.mu.Lock()
		w.holds[hk] = &held{lock, lease}
		w.mu.Unlock()
		return map[string]any{"granted": true}, nil
	case errors.Is(err, redislock.ErrNotObtained) && !isTimeout(err):
		return map[string]any{"granted": false}, nil
	}
	return nil, redisError("obtain", err)
}

func (w *worker) release(hk holdKey) (map[string]any, *protoError) {
	h := w.held(hk)
	if h == nil {
		return nil, fail(codeNotHeld, "release: thread %d holds no redislock Lock on %q", hk.thread, hk.key)
	}
	ctx, cancel := w.ctx()
	defer cancel()
	err := h.lock.Release(ctx)
	switch {
	case err == nil:
		w.drop(hk, h)
		return nil, nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		w.drop(hk, h)
		return nil, fail(codeNotHeld, "release: %v", err)
	}
	return nil, redisError("release", err) // kept: the release may yet be retried
}

// extend is Refresh with the request's lease (the acquire's when 0), no retry: the library's default.
func (w *worker) extend(req *request, hk holdKey) (map[string]any, *protoError) {
	h := w.held(hk)
	if h == nil {
		return nil, fail(codeNotHeld, "extend: thread %d holds no redislock Lock on %q", hk.thread, hk.key)
	}
	lease := h.lease
	if req.LeaseMS > 0 {
		lease = time.Duration(req.LeaseMS) * time.Millisecond
	}
	ctx, cancel := w.ctx()
	defer cancel()
	err := h.lock.Refresh(ctx, lease, nil)
	switch {
	case err == nil:
		return map[string]any{"extended": true}, nil
	case errors.Is(err, redislock.ErrNotObtained) && !isTimeout(err):
		return map[string]any{"extended": false}, nil
	}
	return nil, redisError("refresh", err)
}

// ctx bounds a release or refresh beyond go-redis's own timeouts, so a request cannot hang forever.
func (w *worker) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*w.timeout+5*time.Second)
}
