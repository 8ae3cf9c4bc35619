"""smoke.py RUNCMD ADDR PASSWORD: drives a built redis-semaphore worker (its Mutex) against the Redis at ADDR
(host:port, requirepass PASSWORD) over LCP/1: init with caps watchdog and events, a grant kept past its
lockTimeout by the library's refresh, a refused and a waiting thread, release, a `lost` event once another
value replaces the key (onLockLost), a fixed lease that ends, shutdown. Uses lcp-python's smoke.py Worker and
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
    expect(w.call({"type": "shutdown"}), "shutdown_ok", "shutdown")
    if w.p.wait(5) != 0:
        fail("worker exited non-zero after shutdown")
    if w.bad:
        fail("stdout lines that are not JSON objects: %r" % w.bad[:3])
    ok("exit 0, every stdout line a JSON object")
    print("PASS redis-semaphore")


if __name__ == "__main__":
    main()
