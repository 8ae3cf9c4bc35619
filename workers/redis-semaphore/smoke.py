"""smoke.py RUNCMD ADDR PASSWORD: drives a built redis-semaphore worker (its Mutex, then its Semaphore) against the Redis at ADDR
(host:port, requirepass PASSWORD) over LCP/1: init with caps watchdog and events, a grant kept past its
lockTimeout by the library's refresh, a refused and a waiting thread, release, a `lost` event once another
value replaces the key (onLockLost), a fixed lease that ends, shutdown; then a Semaphore of 2 permits (refreshed,
refusing a third, waking a waiter, onLockLost) and fixed-lease permits (a lapsed one taken over). Uses lcp-python's smoke.py Worker and
redis-cli. Exits 1 on the first failure."""

import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lcp-python"))
from smoke import Worker, expect, fail, ok  # noqa: E402


def main():
    cmd, addr, password = sys.argv[1:4]
    host, _, port = addr.rpartition(":")
    w = Worker(cmd)
    k = lambda n: "smoke-%s-%s" % (uuid.uuid4().hex[:6], n)
    t0 = time.time()
    r = w.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1,
                "topology": {"kind": "single", "nodes": [{"name": "n1", "addr": addr}]}, "password": password,
                "lock": {"kind": "redis-semaphore", "family": "mutex"},
                "options": {"lease_ms": 0, "watchdog_ms": 2000, "wait_ms": 5000, "timeout_ms": 3000}}, timeout=60)
    if r.get("type") != "init_ok" or not {"watchdog", "events"} <= set(r.get("caps", [])):
        fail("init: want init_ok with caps watchdog and events, got %s" % r)
    ok("init: %s %s on %s, caps %s (init_ok after %.2fs)" % (r["library"], r["version"], r["runtime"], r["caps"], time.time() - t0))
    acq = lambda th, key, wait, lease: {"type": "acquire", "thread": th, "keys": [key], "wait_ms": wait, "lease_ms": lease}
    rel = lambda th, key: {"type": "release", "thread": th, "keys": [key]}
    a, b, c, d = k("a"), k("b"), k("c"), k("d")
    expect(w.call(acq(1, a, 0, 0)), "acquire_ok", "thread 1 acquires a (lockTimeout 2 s, refreshed)", granted=True)
    expect(w.call(acq(2, a, 300, 0)), "acquire_ok", "thread 2 is refused a within 300 ms", granted=False)
    time.sleep(3)
    expect(w.call(acq(2, a, 0, 0)), "acquire_ok", "thread 2 is still refused a 3 s later (the refresh kept it)", granted=False)
    expect(w.call(rel(1, a)), "release_ok", "thread 1 releases a")
    expect(w.call(acq(2, a, 1000, 0)), "acquire_ok", "thread 2 acquires a after the release", granted=True)
    expect(w.call(rel(2, a)), "release_ok", "thread 2 releases a")
    expect(w.call(acq(1, b, 0, 0)), "acquire_ok", "thread 1 acquires b", granted=True)
    waiting = w.send(acq(2, b, 5000, 0))
    time.sleep(0.3)
    expect(w.call(rel(1, b)), "release_ok", "thread 1 releases b while thread 2 waits for it")
    expect(w.wait(waiting), "acquire_ok", "waiting thread 2 gets b", granted=True)
    expect(w.call(rel(2, b)), "release_ok", "thread 2 releases b")
    # onLockLost: another value in the key; the next refresh (0.8 × 2 s) finds it and the worker says `lost`.
    expect(w.call(acq(3, c, 0, 0)), "acquire_ok", "thread 3 acquires c", granted=True)
    subprocess.check_call(["redis-cli", "-h", host, "-p", port, "-a", password, "--no-auth-warning", "SET",
                           "mutex:" + c, "someone-else"], stdout=subprocess.DEVNULL)
    end = time.time() + 5
    while time.time() < end:
        with w.cv:
            lost = [e for e in w.events if e.get("event") == "lost" and e.get("thread") == 3 and e.get("key") == c]
        if lost:
            break
        time.sleep(0.1)
    else:
        fail("no lost event for thread 3 and c within 5 s of its key being replaced")
    ok("lost event for thread 3, c: %s" % lost[0].get("text"))
    expect(w.call(rel(3, c)), "release_ok", "thread 3 releases c after the loss (the library's release returns nothing)")
    # A fixed lease (lease_ms > 0: no refresh) ends, and another thread is granted the lock.
    expect(w.call(acq(1, d, 0, 500)), "acquire_ok", "thread 1 acquires d (lease 500 ms, not refreshed)", granted=True)
    expect(w.call(acq(2, d, 3000, 5000)), "acquire_ok", "thread 2 gets d once the lease ends", granted=True)
    expect(w.call(rel(2, d)), "release_ok", "thread 2 releases d")
    expect(w.call({"type": "extend", "thread": 2, "keys": [d], "lease_ms": 1000}), "error", "extend: not supported", code=10)
    done(w)
    semaphores(cmd, addr, password, host, port, k)
    print("PASS redis-semaphore")


def done(w):
    expect(w.call({"type": "shutdown"}), "shutdown_ok", "shutdown")
    if w.p.wait(5) != 0:
        fail("worker exited non-zero after shutdown")
    if w.bad:
        fail("stdout lines that are not JSON objects: %r" % w.bad[:3])
    ok("exit 0, every stdout line a JSON object")


def start(cmd, addr, password, kind, **opts):
    w = Worker(cmd)
    options = {"lease_ms": 0, "watchdog_ms": 2000, "wait_ms": 5000, "timeout_ms": 3000, "permits": 2}
    options.update(opts)
    r = w.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1,
                "topology": {"kind": "single", "nodes": [{"name": "n1", "addr": addr}]}, "password": password,
                "lock": {"kind": kind, "family": kind}, "options": options}, timeout=60)
    if r.get("type") != "init_ok":
        fail("init %s: want init_ok, got %s" % (kind, r))
    ok("init %s: %s" % (kind, r["runtime"]))
    return w


def semaphores(cmd, addr, password, host, port, k):
    """Semaphore (family semaphore: limit = init's permits, refreshed) and a fixed-lease Semaphore (family
    expirable-semaphore: the permit is the library's identifier)."""
    w = start(cmd, addr, password, "semaphore")
    s = k("s")
    perm = lambda th, n, wait: {"type": "acquire_permits", "thread": th, "key": s, "n": n, "wait_ms": wait}
    expect(w.call({"type": "set_permits", "thread": 9, "key": s, "n": 2}), "set_permits_ok", "set_permits 2 (the limit)", set=True)
    expect(w.call(perm(1, 1, 0)), "acquire_permits_ok", "thread 1 takes a permit", granted=True)
    expect(w.call(perm(2, 1, 0)), "acquire_permits_ok", "thread 2 takes the second", granted=True)
    expect(w.call(perm(3, 1, 300)), "acquire_permits_ok", "thread 3 is refused within 300 ms", granted=False)
    time.sleep(3)
    expect(w.call(perm(3, 1, 0)), "acquire_permits_ok", "thread 3 is still refused 3 s later (the refresh kept both)", granted=False)
    expect(w.call({"type": "available", "thread": 9, "key": s}), "available_ok", "available: 0", value=0)
    waiting = w.send(perm(3, 1, 5000))
    time.sleep(0.3)
    expect(w.call({"type": "release_permits", "thread": 1, "key": s, "n": 1}), "release_permits_ok", "thread 1 releases while thread 3 waits")
    expect(w.wait(waiting), "acquire_permits_ok", "waiting thread 3 gets the permit", granted=True)
    # onLockLost: thread 2's member removed; the next refresh (0.8 × 2 s) finds it gone.
    subprocess.check_call(["redis-cli", "-h", host, "-p", port, "-a", password, "--no-auth-warning", "DEL",
                           "semaphore:" + s], stdout=subprocess.DEVNULL)
    end = time.time() + 5
    while time.time() < end:
        with w.cv:
            lost = [e for e in w.events if e.get("event") == "lost" and e.get("key") == s]
        if lost:
            break
        time.sleep(0.1)
    else:
        fail("no lost event within 5 s of the semaphore's key being deleted")
    ok("lost event for %s: %s" % (s, lost[0].get("text")))
    done(w)
    w = start(cmd, addr, password, "expirable-semaphore")
    e = k("e")
    take = lambda th, lease: w.call({"type": "acquire_permit", "thread": th, "key": e, "wait_ms": 0, "lease_ms": lease})
    a = take(1, 5000)
    b = take(2, 500)
    if not a.get("permit") or not b.get("permit"):
        fail("acquire_permit: want two permits, got %s and %s" % (a, b))
    ok("two permits: %s, %s" % (a["permit"], b["permit"]))
    expect(take(3, 5000), "acquire_permit_ok", "a third is refused", permit="")
    time.sleep(0.8)
    c = take(3, 5000)
    if not c.get("permit"):
        fail("acquire_permit after thread 2's 500 ms lease ran out: want a permit, got %s" % c)
    ok("thread 3 gets a permit once thread 2's lease ran out")
    rel = lambda th, p: w.call({"type": "release_permit", "thread": th, "key": e, "permit": p})
    expect(rel(1, a["permit"]), "release_permit_ok", "thread 1 releases its permit", released=True)
    expect(rel(2, b["permit"]), "release_permit_ok", "thread 2's lapsed permit: released (the library's release says nothing)", released=True)
    expect(rel(2, "no-such-permit"), "release_permit_ok", "a permit never granted is not released", released=False)
    done(w)


if __name__ == "__main__":
    main()
