#!/bin/sh
# smoke.sh RUN ADDR [PASSWORD]: checks an LCP/1 worker (RUN, e.g. ~/.cache/lockcheck/.../run) against one
# Redis at ADDR (127.0.0.1:PORT): the handshake, acquire/release with contention on every lock kind the
# worker lists, the watchdog, a lease, error codes, concurrency of threads, shutdown and EOF. One worker
# process per kind, as lockcheck runs one per client. Prints one line per check; exits 1 on a failure.
# ADDR may instead be an init "topology" object in JSON (sentinel, cluster, with its nat), used as it is.
# Needs python3. Keys are fresh per run (smoke-<random>-...), so a shared Redis is fine.
if [ $# -lt 2 ]; then
	echo "usage: smoke.sh RUN ADDR [PASSWORD]" >&2
	exit 2
fi
exec python3 - "$@" <<'PY'
import json, os, shutil, subprocess, sys, tempfile, threading, time, uuid

run, addr = sys.argv[1], sys.argv[2]
topology = json.loads(addr) if addr.lstrip().startswith("{") else {"kind": "single", "nodes": [{"name": "n1", "addr": addr}]}
password = sys.argv[3] if len(sys.argv) > 3 else ""
prefix = "smoke-" + uuid.uuid4().hex[:8]
failures = 0
logs = tempfile.mkdtemp(prefix=prefix + "-")


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


class Worker:
    """One worker process; replies are matched to requests by msg_id, every stdout line must be an object."""

    def __init__(self, kind, watchdog_ms=30000, library_options=None):
        self.p = subprocess.Popen(["sh", "-c", "exec " + run], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(logs, "%s-%d.stderr" % (kind, time.monotonic_ns())), "w"),
                                  text=True, bufsize=1)
        self.next, self.replies, self.order, self.garbage = 1, {}, [], []
        self.cv = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()
        self.t0 = time.monotonic()
        self.init = self.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1,
                               "topology": topology,
                               "password": password, "lock": {"kind": kind, "family": family(kind)},
                               "options": {"lease_ms": 0, "watchdog_ms": watchdog_ms, "wait_ms": 1000, "timeout_ms": 3000},
                               "library_options": library_options or {}}, timeout=60)
        self.startup = time.monotonic() - self.t0

    def read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
                assert isinstance(m, dict)
            except Exception:
                self.garbage.append(line)
                continue
            with self.cv:
                if "in_reply_to" in m:
                    self.replies[m["in_reply_to"]] = m
                    self.order.append(m["in_reply_to"])
                self.cv.notify_all()

    def send(self, req):
        req = dict(req, msg_id=self.next)
        self.next += 1
        try:
            self.p.stdin.write(json.dumps(req) + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the worker is gone: wait() answers "none"
        return req["msg_id"]

    def wait(self, mid, timeout=30):
        with self.cv:
            self.cv.wait_for(lambda: mid in self.replies or self.p.poll() is not None, timeout)
            return self.replies.get(mid, {"type": "none"})

    def call(self, req, timeout=30):
        return self.wait(self.send(req), timeout)

    def close(self):
        r = self.call({"type": "shutdown"})
        check(r.get("type") == "shutdown_ok", "shutdown answered shutdown_ok")
        try:
            code = self.p.wait(6)
        except subprocess.TimeoutExpired:
            self.p.kill()
            code = "still running after 6 s"
        check(code == 0, "worker exited 0 after shutdown (got %s)" % code)
        check(not self.garbage, "stdout held only JSON objects %s" % self.garbage[:3])


def family(kind):
    return {"rwlock": "rwlock", "semaphore": "semaphore", "expirable-semaphore": "expirable-semaphore",
            "latch": "latch"}.get(kind, "mutex")


def ok(r, field=None):
    if field is None:
        return r.get("type", "").endswith("_ok")
    return r.get(field)


def acq(w, thread, keys, wait=0, lease=0, mode=None):
    req = {"type": "acquire", "thread": thread, "keys": keys, "wait_ms": wait, "lease_ms": lease}
    if mode:
        req["mode"] = mode
    return w.call(req)


def rel(w, thread, keys, mode=None):
    req = {"type": "release", "thread": thread, "keys": keys}
    if mode:
        req["mode"] = mode
    return w.call(req)


def mutex(kind, keys, other):
    w = Worker(kind)
    check(w.init.get("type") == "init_ok", "%s: init_ok (%.1f s from start)" % (kind, w.startup))
    # Free locks get a generous wait: a cold JVM's first call is slow, and a multi-lock gives up (and
    # undoes its members) when its wait runs out between members.
    r = acq(w, 1, keys, wait=3000)
    check(r.get("granted") is True, "%s: thread 1 acquires %s %s" % (kind, keys, r))
    if kind == "fenced":
        check(isinstance(r.get("token"), int), "fenced: the grant carries a token (%s)" % r.get("token"))
        t1 = r.get("token", 0)
    if kind == "redlock" and topology["kind"] == "redlock":
        held = [redis(n["addr"], "EXISTS", keys[0]) == b":1\r\n" for n in topology["nodes"]]
        check(all(held), "redlock: %s is held on every master %s" % (keys[0], held))
    r = acq(w, 2, other, wait=200)
    check(r.get("granted") is False, "%s: thread 2 is refused %s while thread 1 holds it %s" % (kind, other, r))
    r = acq(w, 1, keys, wait=3000)
    check(r.get("granted") is True, "%s: thread 1 re-enters" % kind)
    check(ok(rel(w, 1, keys)) and ok(rel(w, 1, keys)), "%s: thread 1 releases twice" % kind)
    # RedissonMultiLock.unlock does not report a lock it did not hold, and RFairLock's unlock script answers
    # "released" when the lock does not exist.
    if kind not in ("multi", "redlock", "fair"):
        r = rel(w, 1, keys)
        check(r.get("type") == "error" and r.get("code") == 40, "%s: a third release is error 40 (%s)" % (kind, r))
    r = acq(w, 2, other, wait=3000)
    check(r.get("granted") is True, "%s: thread 2 acquires once it is free" % kind)
    if kind == "fenced":
        check(r.get("token", 0) > t1, "fenced: the later grant has a larger token (%s > %s)" % (r.get("token"), t1))
    # A waiter is woken by the release (pub/sub), well before its wait runs out.
    mid = w.send({"type": "acquire", "thread": 3, "keys": other, "wait_ms": 10000, "lease_ms": 0})
    time.sleep(0.3)
    t = time.monotonic()
    rel(w, 2, other)
    r = w.wait(mid)
    check(r.get("granted") is True and time.monotonic() - t < 5, "%s: a waiting thread is granted on release (%.2f s)"
          % (kind, time.monotonic() - t))
    rel(w, 3, other)
    w.close()


def rwlock():
    k = [prefix + "-rw"]
    w = Worker("rwlock")
    check(w.init.get("type") == "init_ok", "rwlock: init_ok")
    check(acq(w, 1, k, 3000, 0, "read").get("granted") is True, "rwlock: thread 1 reads")
    check(acq(w, 2, k, 3000, 0, "read").get("granted") is True, "rwlock: thread 2 reads alongside")
    check(acq(w, 3, k, 200, 0, "write").get("granted") is False, "rwlock: thread 3 cannot write while they read")
    rel(w, 1, k, "read")
    rel(w, 2, k, "read")
    check(acq(w, 3, k, 3000, 0, "write").get("granted") is True, "rwlock: thread 3 writes once they are done")
    check(acq(w, 1, k, 200, 0, "read").get("granted") is False, "rwlock: thread 1 cannot read while 3 writes")
    check(ok(rel(w, 3, k, "write")), "rwlock: thread 3 releases its write lock")
    r = w.call({"type": "acquire", "thread": 1, "keys": k, "wait_ms": 0, "lease_ms": 0})
    check(r.get("type") == "error" and r.get("code") == 12, "rwlock: acquire without mode is error 12")
    w.close()


def semaphore():
    k = prefix + "-sem"
    w = Worker("semaphore")
    check(w.init.get("type") == "init_ok", "semaphore: init_ok")
    check(w.call({"type": "set_permits", "thread": 1, "key": k, "n": 2}).get("set") is True, "semaphore: set_permits 2")
    check(w.call({"type": "set_permits", "thread": 1, "key": k, "n": 5}).get("set") is False, "semaphore: set_permits again is refused")
    check(w.call({"type": "acquire_permits", "thread": 1, "key": k, "n": 2, "wait_ms": 3000}).get("granted") is True, "semaphore: thread 1 takes 2")
    check(w.call({"type": "acquire_permits", "thread": 2, "key": k, "n": 1, "wait_ms": 200}).get("granted") is False, "semaphore: thread 2 gets none")
    check(w.call({"type": "available", "thread": 2, "key": k}).get("value") == 0, "semaphore: available 0")
    check(ok(w.call({"type": "release_permits", "thread": 1, "key": k, "n": 2})), "semaphore: thread 1 gives 2 back")
    check(w.call({"type": "available", "thread": 2, "key": k}).get("value") == 2, "semaphore: available 2")
    r = w.call({"type": "acquire", "thread": 1, "keys": [k], "wait_ms": 0, "lease_ms": 0})
    check(r.get("type") == "error" and r.get("code") == 10, "semaphore: acquire is error 10 for this kind")
    w.close()


def expirable():
    k = prefix + "-pes"
    w = Worker("expirable-semaphore")
    check(w.init.get("type") == "init_ok", "expirable-semaphore: init_ok")
    check(w.call({"type": "set_permits", "thread": 1, "key": k, "n": 1}).get("set") is True, "expirable-semaphore: set_permits 1")
    p = w.call({"type": "acquire_permit", "thread": 1, "key": k, "wait_ms": 3000, "lease_ms": 10000}).get("permit")
    check(isinstance(p, str) and p != "", "expirable-semaphore: thread 1 gets a permit (%s)" % p)
    r = w.call({"type": "acquire_permit", "thread": 2, "key": k, "wait_ms": 200, "lease_ms": 10000})
    check(r.get("permit") == "", "expirable-semaphore: thread 2 gets none")
    check(w.call({"type": "release_permit", "thread": 1, "key": k, "permit": p}).get("released") is True, "expirable-semaphore: release by id")
    check(w.call({"type": "release_permit", "thread": 1, "key": k, "permit": p}).get("released") is False, "expirable-semaphore: a second release is false")
    p = w.call({"type": "acquire_permit", "thread": 2, "key": k, "wait_ms": 3000, "lease_ms": 300}).get("permit")
    time.sleep(0.6)
    check(w.call({"type": "available", "thread": 1, "key": k}).get("value") == 1, "expirable-semaphore: a lapsed permit is available again")
    check(w.call({"type": "release_permit", "thread": 2, "key": k, "permit": p}).get("released") is False, "expirable-semaphore: releasing a lapsed permit is false")
    w.close()


def latch():
    k = prefix + "-latch"
    w = Worker("latch")
    check(w.init.get("type") == "init_ok", "latch: init_ok")
    check(w.call({"type": "set_count", "thread": 1, "key": k, "n": 2}).get("set") is True, "latch: set_count 2")
    check(w.call({"type": "await", "thread": 2, "key": k, "wait_ms": 100}).get("done") is False, "latch: await times out while the count is 2")
    # Threads run concurrently: a long await on thread 2 does not hold up thread 1's countDowns.
    mid = w.send({"type": "await", "thread": 2, "key": k, "wait_ms": 10000})
    time.sleep(0.2)
    check(ok(w.call({"type": "count_down", "thread": 1, "key": k})), "latch: count_down")
    check(ok(w.call({"type": "count_down", "thread": 3, "key": k})), "latch: count_down")
    check(w.wait(mid).get("done") is True, "latch: the waiting await returns done once the count is zero")
    check(w.order.index(mid) > w.order.index(mid + 1), "latch: replies came in completion order, not request order")
    w.close()


def watchdog():
    k = [prefix + "-wd"]
    w = Worker("reentrant", watchdog_ms=1000)
    check(acq(w, 1, k).get("granted") is True, "watchdog: thread 1 acquires without a lease (watchdog 1 s)")
    time.sleep(2.5)
    check(acq(w, 2, k).get("granted") is False, "watchdog: after 2.5 s the lock is still held (renewed)")
    rel(w, 1, k)
    check(acq(w, 2, k, lease=400).get("granted") is True, "lease: thread 2 acquires with a 400 ms lease")
    time.sleep(0.8)
    check(acq(w, 3, k).get("granted") is True, "lease: after 800 ms the lease has run out and thread 3 acquires")
    r = rel(w, 2, k)
    check(r.get("type") == "error" and r.get("code") == 40, "lease: thread 2's late release is error 40")
    r = w.call({"type": "extend", "thread": 3, "keys": k, "lease_ms": 1000})
    check(r.get("type") == "error" and r.get("code") == 10, "extend is error 10 (Redisson has none)")
    r = w.call({"type": "acquire", "keys": k, "wait_ms": 0, "lease_ms": 0})
    check(r.get("type") == "error" and r.get("code") == 12, "a request without a thread is error 12")
    # EOF, not shutdown: the worker must exit 0 by itself.
    w.p.stdin.close()
    try:
        code = w.p.wait(6)
    except subprocess.TimeoutExpired:
        w.p.kill()
        code = "still running after 6 s"
    check(code == 0, "worker exited 0 on stdin EOF (got %s)" % code)


def redis(address, *cmd):
    """One command on a node (after AUTH), its raw RESP reply."""
    import socket
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), 5)
    reply = b""
    for c in ([["AUTH", password]] if password else []) + [list(cmd)]:
        s.sendall(("*%d\r\n" % len(c) + "".join("$%d\r\n%s\r\n" % (len(x.encode()), x) for x in c)).encode())
        reply = s.recv(256)
        if reply.startswith(b"-"):
            raise RuntimeError("%s: %r" % (c[0], reply))
    s.close()
    return reply


def pause_redis(ms):
    """CLIENT PAUSE on the single node: every command waits ms, as on a stalled server."""
    redis(addr, "CLIENT", "PAUSE", str(ms), "ALL")


def stalled():
    """Error codes that need a stalled server: a timeout, and a late not-held answer that is not trusted."""
    k = [prefix + "-stall"]
    w = Worker("reentrant", library_options={"retryAttempts": "0"})
    r = acq(w, 1, k, wait=3000)
    check(r.get("granted") is True, "stalled: thread 1 acquires")
    pause_redis(1500)
    t = time.monotonic()
    r = rel(w, 2, k)
    took = time.monotonic() - t
    # Answered after the server's 1.5 s stall, so Redisson might have resent an unlock that had applied.
    check(r.get("code") == 13 and took >= 1.4, "stalled: a not-held answer after %.1f s is error 13, not 40 (%s)"
          % (took, r.get("code")))
    w.close()
    w = Worker("reentrant", library_options={"retryAttempts": "0", "timeout": "500"})
    check(acq(w, 1, [prefix + "-stall2"], wait=3000).get("granted") is True, "stalled: a worker with timeout 500 ms acquires")
    pause_redis(2000)
    r = acq(w, 2, [prefix + "-stall2"])
    # 0, or 13 where Redisson itself fails on the way (3.27.2 throws a NullPointerException in handleNoSync
    # on a response timeout): either way indefinite, never a definite code or an answer.
    check(r.get("type") == "error" and r.get("code") in (0, 13),
          "stalled: a command that times out is an indefinite error, 0 or 13 (%s: %s)" % (r.get("code"), r.get("text", "")[:120]))
    time.sleep(2)
    w.close()
    if "expirable-semaphore" not in kinds:
        return
    k = prefix + "-stall-pes"
    w = Worker("expirable-semaphore", library_options={"retryAttempts": "0"})
    w.call({"type": "set_permits", "thread": 1, "key": k, "n": 1})
    p = w.call({"type": "acquire_permit", "thread": 1, "key": k, "wait_ms": 3000, "lease_ms": 10000}).get("permit")
    check(w.call({"type": "release_permit", "thread": 1, "key": k, "permit": p}).get("released") is True,
          "stalled: a permit is released")
    pause_redis(1500)
    r = w.call({"type": "release_permit", "thread": 1, "key": k, "permit": p})
    check(r.get("code") == 13, "stalled: released=false after a stall is error 13 (%s)" % r)
    pause_redis(1500)
    r = w.call({"type": "set_permits", "thread": 1, "key": k, "n": 1})
    check(r.get("code") == 13, "stalled: set=false after a stall is error 13 (%s)" % r)
    w.close()


def paused():
    """A frozen worker (SIGSTOP, as lockcheck's client-pause) stops its watchdog: its lock lapses, another
    client takes it, and the thawed worker learns at unlock that it no longer holds it."""
    import signal
    k = [prefix + "-pause"]
    a, b = Worker("reentrant", watchdog_ms=1000), Worker("reentrant", watchdog_ms=1000)
    check(acq(a, 1, k, wait=3000).get("granted") is True, "pause: client A acquires (watchdog 1 s)")
    os.kill(a.p.pid, signal.SIGSTOP)
    try:
        t = time.monotonic()
        r = acq(b, 1, k, wait=10000)
        check(r.get("granted") is True, "pause: client B acquires %.1f s into A's freeze" % (time.monotonic() - t))
    finally:
        os.kill(a.p.pid, signal.SIGCONT)
    r = rel(a, 1, k)
    check(r.get("type") == "error" and r.get("code") in (13, 40), "pause: thawed A's unlock says not held (%s)" % r.get("code"))
    check(ok(rel(b, 1, k)), "pause: B releases")
    a.close()
    b.close()


def bad_init():
    w = Worker("reentrant", library_options={"noSuchSetting": "1"})
    check(w.init.get("type") == "error" and w.init.get("code") == 10, "init with an unknown library option is error 10 (%s)" % w.init.get("text"))
    try:
        code = w.p.wait(6)
    except subprocess.TimeoutExpired:
        w.p.kill()
        code = None
    check(code not in (0, None), "the worker exits non-zero after a refused init (%s)" % code)
    w = Worker("no-such-kind")
    check(w.init.get("type") == "error" and w.init.get("code") == 10, "init with an unknown lock kind is error 10 (%s)" % w.init.get("text"))
    w.p.kill()
    w.p.wait()
    w = Worker("reentrant", library_options={"retryAttempts": "2", "timeout": "2000"})
    check(w.init.get("type") == "init_ok", "init with retryAttempts and timeout as library options")
    kinds = w.init.get("kinds", [])
    print("     worker: %s %s on %s, kinds %s, caps %s" % (w.init.get("library"), w.init.get("version"),
          w.init.get("runtime"), kinds, w.init.get("caps")), flush=True)
    w.close()
    return kinds


kinds = bad_init() if not os.environ.get("SMOKE_ONLY") else os.environ["SMOKE_ONLY"].split(",")
for kind in ("reentrant", "fair", "fenced"):
    if kind in kinds:
        mutex(kind, [prefix + "-" + kind], [prefix + "-" + kind])
if "multi" in kinds:
    mutex("multi", [prefix + "-m1", prefix + "-m2"], [prefix + "-m2", prefix + "-m3"])
if "redlock" in kinds:
    # On a redlock topology the usual group: one key on every master; elsewhere several keys on one node.
    rk = [prefix + "-r1"] if topology["kind"] == "redlock" else [prefix + "-r1", prefix + "-r2", prefix + "-r3"]
    mutex("redlock", rk, rk)
if "rwlock" in kinds:
    rwlock()
if "semaphore" in kinds:
    semaphore()
if "expirable-semaphore" in kinds:
    expirable()
if "latch" in kinds:
    latch()
watchdog()
paused()
if topology["kind"] == "single":
    stalled()
if failures:
    print("smoke: %d check(s) failed; the workers' stderr is in %s" % (failures, logs))
else:
    shutil.rmtree(logs, ignore_errors=True)
    print("smoke: all checks passed")
sys.exit(1 if failures else 0)
PY
