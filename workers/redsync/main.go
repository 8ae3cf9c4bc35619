//go:build ignore

// Command worker drives github.com/go-redsync/redsync/v4 for lockcheck over LCP/1 (docs/protocol.md).
// Its code compiles against every v4 release from v4.0.3 on, so it uses only the API v4.0.3 already had.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
)

const module = "github.com/go-redsync/redsync/v4"

// holdKey: redsync ties a lock to the random value its Mutex holds, so one Mutex per (thread, key).
type holdKey struct {
	thread int64
	key    string
}

type worker struct {
	rs      *redsync.Redsync
	closeFn func()
	lease   time.Duration // for lease_ms 0
	delay   time.Duration // between tries of one acquire
	drift   float64       // 0: the library's default
	kind    string

	mu    sync.Mutex
	holds map[holdKey]*heldMutex
}

type heldMutex struct {
	m      *redsync.Mutex
	expiry time.Duration
}

func main() {
	w := &worker{holds: map[holdKey]*heldMutex{}}
	serve(os.Stdin, w.init, w.handle)
	if w.closeFn != nil {
		w.closeFn()
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
	kinds := []string{"redsync", "mutex"}
	if req.Protocol != 1 {
		return nil, fail(codeNotSupported, "protocol %d: this worker speaks LCP/1", req.Protocol)
	}
	if req.Lock.Family != "mutex" || (req.Lock.Kind != "redsync" && req.Lock.Kind != "mutex") {
		return nil, fail(codeNotSupported, "lock %s (family %s): redsync is a mutex; kinds %v", req.Lock.Kind, req.Lock.Family, kinds)
	}
	w.kind = req.Lock.Kind
	o := req.Options
	switch {
	case o.LeaseMS > 0:
		w.lease = time.Duration(o.LeaseMS) * time.Millisecond
	case o.WatchdogMS > 0:
		w.lease = time.Duration(o.WatchdogMS) * time.Millisecond
	default:
		w.lease = 8 * time.Second // redsync's own default expiry
	}
	w.delay = 50 * time.Millisecond
	for k, v := range req.LibraryOptions {
		switch k {
		case "retryDelayMs":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fail(codeMalformed, "library option retryDelayMs=%q: want a positive integer", v)
			}
			w.delay = time.Duration(n) * time.Millisecond
		case "driftFactor":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f >= 1 {
				return nil, fail(codeMalformed, "library option driftFactor=%q: want a number in [0, 1)", v)
			}
			w.drift = f
		default:
			return nil, fail(codeNotSupported, "library option %q: this worker knows retryDelayMs, driftFactor", k)
		}
	}
	pools, closeFn, err := newPools(req.Topology, req.Password, time.Duration(o.TimeoutMS)*time.Millisecond)
	if err != nil {
		return nil, fail(codeNotSupported, "%v", err)
	}
	w.rs, w.closeFn = redsync.New(pools...), closeFn
	return map[string]any{"library": "redsync", "version": libraryVersion(), "runtime": runtime.Version(),
		"kinds": kinds, "caps": []string{"extend"}}, nil
}

// addrs are the masters redsync takes a quorum over: every node on redlock, the first on single.
func addrs(t topology) ([]string, error) {
	var out []string
	switch t.Kind {
	case "single":
		if len(t.Nodes) > 0 {
			out = append(out, t.Nodes[0].Addr)
		}
	case "redlock":
		for _, n := range t.Nodes {
			out = append(out, n.Addr)
		}
	default:
		return nil, fmt.Errorf("topology %q: the redsync worker runs on single or redlock", t.Kind)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("topology %q has no nodes", t.Kind)
	}
	return out, nil
}

func (w *worker) handle(req *request) (map[string]any, *protoError) {
	if req.Thread <= 0 {
		return nil, fail(codeMalformed, "%s: thread must be a positive integer", req.Type)
	}
	if req.Mode != "" {
		return nil, fail(codeNotSupported, "%s: mode %q: redsync has no read-write lock", req.Type, req.Mode)
	}
	switch req.Type {
	case "acquire", "release", "extend":
	default:
		return nil, fail(codeNotSupported, "request %q: the redsync worker does acquire, release, extend", req.Type)
	}
	if len(req.Keys) != 1 {
		return nil, fail(codeNotSupported, "%s: %d keys: a redsync Mutex locks one name", req.Type, len(req.Keys))
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

func (w *worker) held(hk holdKey) *heldMutex {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holds[hk]
}

func (w *worker) acquire(req *request, hk holdKey) (map[string]any, *protoError) {
	expiry := w.lease
	if req.LeaseMS > 0 {
		expiry = time.Duration(req.LeaseMS) * time.Millisecond
	}
	// redsync waits by trying again: Lock makes `tries` attempts wait_ms/delay apart (TryLock is tries=1).
	tries := 1
	if req.WaitMS > 0 {
		tries += int(time.Duration(req.WaitMS) * time.Millisecond / w.delay)
	}
	opts := []redsync.Option{redsync.WithExpiry(expiry), redsync.WithTries(tries), redsync.WithRetryDelay(w.delay)}
	if w.drift > 0 {
		opts = append(opts, redsync.WithDriftFactor(w.drift))
	}
	m := w.rs.NewMutex(hk.key, opts...)
	err := m.LockContext(context.Background())
	if err == nil {
		w.mu.Lock()
		w.holds[hk] = &heldMutex{m, expiry}
		w.mu.Unlock()
		return map[string]any{"granted": true}, nil
	}
	// The library's "failed"/"taken" answers are a refusal; a timeout anywhere may have left a grant.
	var timeout, other, refused, unsent bool
	for _, e := range leaves(err) {
		switch {
		case errors.Is(e, redsync.ErrFailed), typeName(e) == "ErrTaken", typeName(e) == "ErrNodeTaken":
			refused = true
		case isTimeout(e):
			timeout = true
		case isUnsent(e):
			unsent = true
		default:
			other = true
		}
	}
	switch {
	case other:
		return nil, fail(codeCrash, "lock: %v", err)
	case timeout:
		return nil, fail(codeTimeout, "lock: %v", err)
	case refused:
		return map[string]any{"granted": false}, nil
	case unsent:
		return nil, fail(codeUnavailable, "lock: %v", err)
	}
	return nil, fail(codeCrash, "lock: %v", err)
}

// notHeldAnswer: the library's own "not yours / gone" answers, as opposed to errors reaching Redis.
func notHeldAnswer(e error) bool {
	n := typeName(e)
	return n == "ErrNodeTaken" || n == "ErrTaken" || e.Error() == "redsync: failed to unlock, lock was already expired" ||
		e.Error() == "redsync: failed to extend lock"
}

// classify sorts a false Unlock/Extend: nil (the library's plain "no") or only not-held answers → ok=false;
// a timeout anywhere → indefinite 0; anything else → 13.
func classify(what string, err error) (notHeld bool, perr *protoError) {
	var timeout, other bool
	for _, e := range leaves(err) {
		switch {
		case notHeldAnswer(e):
		case isTimeout(e):
			timeout = true
		default:
			other = true
		}
	}
	switch {
	case other:
		return false, fail(codeCrash, "%s: %v", what, err)
	case timeout:
		return false, fail(codeTimeout, "%s: %v", what, err)
	}
	return true, nil
}

func (w *worker) release(hk holdKey) (map[string]any, *protoError) {
	h := w.held(hk)
	if h == nil {
		return nil, fail(codeNotHeld, "release: thread %d holds no redsync Mutex on %q", hk.thread, hk.key)
	}
	ok, err := h.m.UnlockContext(context.Background())
	if ok {
		w.drop(hk, h)
		return nil, nil
	}
	if _, perr := classify("unlock", err); perr != nil {
		return nil, perr // kept: the unlock may yet be retried
	}
	w.drop(hk, h)
	return nil, fail(codeNotHeld, "unlock: the library says the lock is not held (%v)", err)
}

func (w *worker) drop(hk holdKey, h *heldMutex) {
	w.mu.Lock()
	if w.holds[hk] == h {
		delete(w.holds, hk)
	}
	w.mu.Unlock()
}

func (w *worker) extend(req *request, hk holdKey) (map[string]any, *protoError) {
	h := w.held(hk)
	if h == nil {
		return nil, fail(codeNotHeld, "extend: thread %d holds no redsync Mutex on %q", hk.thread, hk.key)
	}
	// Extend resets the Mutex's own expiry; redsync has no way to extend by another length.
	if req.LeaseMS > 0 && time.Duration(req.LeaseMS)*time.Millisecond != h.expiry {
		return nil, fail(codeNotSupported, "extend: lease_ms %d: redsync extends by the expiry given at acquire (%d ms)",
			req.LeaseMS, h.expiry.Milliseconds())
	}
	ok, err := h.m.ExtendContext(context.Background())
	if ok {
		return map[string]any{"extended": true}, nil
	}
	if _, perr := classify("extend", err); perr != nil {
		return nil, perr
	}
	return map[string]any{"extended": false}, nil
}
