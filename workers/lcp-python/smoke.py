"""smoke.py KIND RUNCMD ADDR[,ADDR...] PASSWORD: drives one LCP/1 mutex worker end to end against a real Redis.

Checks init, acquire/release/extend, a refused acquire by a second thread, a grant to a waiting thread
while another request is in flight, a lease that ends, release of a lock not held (error 40), malformed and
unsupported requests, and shutdown. Prints one line per check and the time to init_ok; exits 1 on the
first failure. Used by each Python worker's smoke.sh.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid


class Worker(object):
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.environ.get("SMOKE_STDERR", os.devnull), "ab"))
        self.replies = {}
        self.events = []  # event messages (no in_reply_to), in order
        self.cv = threading.Condition()
        self.bad = []
        self.eof = False
        self.next_id = 1
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
                assert isinstance(m, dict)
            except Exception:
                self.bad.append(line)
                continue
            with self.cv:
                if m.get("type") == "event":
                    self.events.append(m)
                else:
                    self.replies[m.get("in_reply_to")] = m
                self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def send(self, msg):
        mid = self.next_id
        self.next_id += 1
        msg = dict(msg, msg_id=mid)
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        return mid

    def wait(self, mid, timeout=20):
        end = time.time() + timeout
        with self.cv:
            while mid not in self.replies:
                if self.eof:
                    fail("the worker closed stdout (exit %s) before replying to msg %d" % (self.p.wait(), mid))
                left = end - time.time()
                if left <= 0:
                    fail("no reply to msg %d within %ds" % (mid, timeout))
                self.cv.wait(left)
            return self.replies.pop(mid)

    def call(self, msg, timeout=20):
        return self.wait(self.send(msg), timeout)


def fail(text):
    print("FAIL: " + text)
    sys.stdout.flush()
    os._exit(1)


def ok(text):
    print("ok   " + text)
    sys.stdout.flush()


def expect(reply, typ, what, **fields):
    if reply.get("type") != typ or any(reply.get(k) != v for k, v in fields.items()):
        fail("%s: want %s %s, got %s" % (what, typ, fields, json.dumps(reply)))
    ok(what)


def topology(addr):
    """ADDR is one host:port (topology single) or several, comma-separated (redlock: independent masters)."""
    addrs = addr.split(",")
    nodes = [{"name": "n%d" % (i + 1), "addr": a} for i, a in enumerate(addrs)]
    return {"kind": "redlock" if len(addrs) > 1 else "single", "nodes": nodes}


def main():
    kind, cmd, addr, password = sys.argv[1:5]
    w = Worker(cmd)
    run = uuid.uuid4().hex[:8]
    k = lambda n: "smoke-%s-%s" % (run, n)
    t0 = time.time()
    r = w.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1,
                "topology": topology(addr),
                "password": password, "lock": {"kind": kind, "family": "mutex"},
                "options": {"lease_ms": 0, "watchdog_ms": 30000, "wait_ms": 5000, "timeout_ms": 3000},
                # SMOKE_LIBRARY_OPTIONS (a JSON object) picks a flavour, e.g. redis-py's {"asyncio": "true"}.
                "library_options": json.loads(os.environ.get("SMOKE_LIBRARY_OPTIONS") or "{}")}, timeout=60)
    startup = time.time() - t0
    if r.get("type") != "init_ok" or kind not in r.get("kinds", []) or "extend" not in r.get("caps", []):
        fail("init: want init_ok with kind %s and cap extend, got %s" % (kind, json.dumps(r)))
    if not r.get("version"):
        fail("init_ok has no version: %s" % json.dumps(r))
    ok("init: %s %s on %s, kinds %s, caps %s (init_ok after %.2fs)" % (
        r.get("library"), r.get("version"), r.get("runtime"), r.get("kinds"), r.get("caps"), startup))

    # A library whose leases (and waits) come in units (lease_granularity_ms) is sent whole units: q rounds up.
    g = r.get("lease_granularity_ms") or 0
    q = lambda ms: ms if not g or ms == 0 else max(g, -(-ms // g) * g)
    acq = lambda th, key, wait, lease: {"type": "acquire", "thread": th, "keys": [key], "wait_ms": q(wait), "lease_ms": q(lease)}
    rel = lambda th, key: {"type": "release", "thread": th, "keys": [key]}
    ext = lambda th, key, lease: {"type": "extend", "thread": th, "keys": [key], "lease_ms": q(lease)}

    expect(w.call(acq(1, k("a"), 0, 2000)), "acquire_ok", "thread 1 acquires a (lease 2 s)", granted=True)
    expect(w.call(acq(2, k("a"), 300, 2000)), "acquire_ok", "thread 2 is refused a within %d ms" % q(300), granted=False)
    expect(w.call(ext(1, k("a"), 6000)), "extend_ok", "thread 1 extends a to 6 s", extended=True)
    time.sleep(2.5)  # past the first lease: only the extension can still hold the lock
    expect(w.call(acq(2, k("a"), 0, 1000)), "acquire_ok", "thread 2 is still refused a 2.5 s later (extend took)", granted=False)
    expect(w.call(rel(1, k("a"))), "release_ok", "thread 1 releases a")
    expect(w.call(acq(2, k("a"), 1000, 5000)), "acquire_ok", "thread 2 acquires a after the release", granted=True)
    expect(w.call(rel(1, k("a"))), "error", "thread 1 releases a again: not held", code=40)
    if os.environ.get("SMOKE_FREE_RELEASE") == "ok":
        # A library whose release of a free key answers ok (aioredlock: its unlock script says OK when the key is gone).
        expect(w.call(rel(3, k("never"))), "release_ok", "thread 3 releases a free lock it never acquired: ok (the library's answer)")
    else:
        expect(w.call(rel(3, k("never"))), "error", "thread 3 releases a lock it never acquired: not held", code=40)
    r = w.call(ext(3, k("never"), 1000))
    if not (r.get("type") == "error" and r.get("code") == 40) and not (r.get("type") == "extend_ok" and r.get("extended") is False):
        fail("extend of a lock not held: want error 40 or extended false, got %s" % json.dumps(r))
    ok("thread 3 extends a lock it never acquired: %s" % json.dumps(r))
    expect(w.call(rel(2, k("a"))), "release_ok", "thread 2 releases a")

    # Concurrency: thread 2 waits for b while thread 1, which holds it, releases it.
    expect(w.call(acq(1, k("b"), 0, 10000)), "acquire_ok", "thread 1 acquires b", granted=True)
    waiting = w.send(acq(2, k("b"), 8000, 10000))
    time.sleep(0.3)
    expect(w.call(rel(1, k("b"))), "release_ok", "thread 1 releases b while thread 2 waits for it")
    expect(w.wait(waiting), "acquire_ok", "waiting thread 2 gets b", granted=True)
    expect(w.call(rel(2, k("b"))), "release_ok", "thread 2 releases b")

    # A lease ends: the lock passes on, and its first owner's release says not held.
    expect(w.call(acq(1, k("c"), 0, 300)), "acquire_ok", "thread 1 acquires c (lease %d ms)" % q(300), granted=True)
    expect(w.call(acq(2, k("c"), 3000, 5000)), "acquire_ok", "thread 2 gets c once the lease ends", granted=True)
    r = w.call(ext(1, k("c"), 5000))
    if not (r.get("type") == "error" and r.get("code") == 40) and not (r.get("type") == "extend_ok" and r.get("extended") is False):
        fail("extend of a lost lock: want error 40 or extended false, got %s" % json.dumps(r))
    ok("thread 1 extends c it lost: %s" % json.dumps(r))
    expect(w.call(rel(1, k("c"))), "error", "thread 1 releases c it lost: not held", code=40)
    expect(w.call(rel(2, k("c"))), "release_ok", "thread 2 releases c")

    expect(w.call({"type": "acquire", "thread": 0, "keys": [k("d")], "wait_ms": 0, "lease_ms": 0}), "error",
           "acquire with thread 0: malformed", code=12)
    expect(w.call({"type": "acquire_permits", "thread": 1, "key": k("d"), "n": 1, "wait_ms": 0}), "error",
           "acquire_permits: not supported", code=10)
    expect(w.call({"type": "shutdown"}), "shutdown_ok", "shutdown")
    try:
        rc = w.p.wait(5)
    except subprocess.TimeoutExpired:
        w.p.kill()
        fail("worker still running 5 s after shutdown_ok")
    if rc != 0:
        fail("worker exited %d after shutdown" % rc)
    if w.bad:
        fail("stdout lines that are not JSON objects: %r" % w.bad[:3])
    ok("exit 0, every stdout line a JSON object")
    print("PASS %s (init_ok after %.2fs)" % (kind, startup))


if __name__ == "__main__":
    main()
