#!/bin/sh
# smoke.sh RUNCMD ADDR PASSWORD: checks this LCP/1 worker (RUNCMD, e.g. OUTDIR/run) end to end against one
# Redis at ADDR (127.0.0.1:PORT) that requires PASSWORD: the handshake and its start-up time, acquire,
# a second thread refused, extend, release, release of a lock never taken (40), a lock lost to expiry
# (extend false, release 40; redsync v4.0.0-v4.0.3 say "extended"/released: the bug fixed in v4.0.4;
# redislock: Refresh false, Release ErrLockNotHeld). Shared by the Go library workers (redislock links here),
# a worker process stopped (SIGSTOP, as client-pause) past its lease while another process takes the lock,
# concurrent threads, malformed and unsupported requests, shutdown and EOF. One line per check; exit 1
# on a failure. Keys are fresh per run; with redis-cli installed it also pauses the Redis for 3.5 s (CLIENT
# PAUSE: a timeout must be 0) and checks Redlock's quorum. Needs python3.
# ADDR may also be several addresses, a,b,c (a redlock topology: independent masters, one PASSWORD), or an
# init "topology" object in JSON (e.g. sentinel, with its nat), used as it is.
if [ $# -ne 3 ]; then
	echo "usage: smoke.sh RUNCMD ADDR PASSWORD" >&2
	exit 2
fi
exec python3 - "$@" <<'PY'
import json, os, re, shutil, subprocess, sys, tempfile, threading, time, uuid

run, addr, password = sys.argv[1:4]
if addr.lstrip().startswith("{"):
    topology = json.loads(addr)
elif "," in addr:
    topology = {"kind": "redlock", "nodes": [{"name": "n%d" % (i + 1), "addr": a} for i, a in enumerate(addr.split(","))]}
else:
    topology = {"kind": "single", "nodes": [{"name": "n1", "addr": addr}]}
prefix = "smoke-" + uuid.uuid4().hex[:8]
failures = 0
logs = tempfile.mkdtemp(prefix=prefix + "-")  # each worker's stderr; kept when a check fails


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failures += 0 if ok else 1


class Worker:
    def __init__(self, kind, family="mutex", lease_ms=0, topo=None, timeout_ms=2000):
        self.p = subprocess.Popen(["sh", "-c", "exec " + run], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(logs, "worker-%d.stderr" % time.monotonic_ns()), "w"),
                                  text=True, bufsize=1)
        self.next, self.replies, self.arrival, self.garbage = 1, {}, [], []
        self.cv = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()
        t0 = time.monotonic()
        self.init = self.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1,
                               "topology": topo or topology,
                               "password": password, "lock": {"kind": kind, "family": family},
                               "options": {"lease_ms": lease_ms, "watchdog_ms": 30000, "wait_ms": 1000, "timeout_ms": timeout_ms},
                               "library_options": {}}, timeout=60)
        self.startup = time.monotonic() - t0

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
                    self.arrival.append(m["in_reply_to"])
                self.cv.notify_all()

    def send(self, req):
        req = dict(req, msg_id=self.next)
        self.next += 1
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return req["msg_id"]

    def wait(self, mid, timeout=30):
        with self.cv:
            self.cv.wait_for(lambda: mid in self.replies or self.p.poll() is not None, timeout)
            return self.replies.get(mid, {"type": "none"})

    def call(self, req, timeout=30):
        return self.wait(self.send(req), timeout)


def acq(w, thread, key, wait_ms=0, lease_ms=2000):
    return w.call({"type": "acquire", "thread": thread, "keys": [key], "wait_ms": wait_ms, "lease_ms": lease_ms})


def rel(w, thread, key):
    return w.call({"type": "release", "thread": thread, "keys": [key]})


def ext(w, thread, key, lease_ms=2000):
    return w.call({"type": "extend", "thread": thread, "keys": [key], "lease_ms": lease_ms})


w = Worker("mutex")
i = w.init
check(i.get("type") == "init_ok" and i.get("version") and i.get("library"), "init_ok %s %s %s kinds=%s caps=%s (%.2f s to init_ok)"
      % (i.get("library"), i.get("version"), i.get("runtime"), i.get("kinds"), i.get("caps"), w.startup))
lib, version = i.get("library", ""), i.get("version", "")
check(lib in i.get("kinds", []) and "mutex" in i.get("kinds", []) and "extend" in i.get("caps", []),
      "init_ok lists the kinds %s and mutex, and the extend cap" % lib)
w2 = Worker("rwlock", family="rwlock")
check(w2.init.get("type") == "error" and w2.p.wait(10) != 0, "init with an rwlock is refused and the worker exits: %s" % w2.init.get("text"))

k = prefix + "-a"
check(acq(w, 1, k).get("granted") is True, "thread 1 acquires " + k)
t0 = time.monotonic()
r = acq(w, 2, k, wait_ms=300)
took = time.monotonic() - t0
check(r.get("type") == "acquire_ok" and r.get("granted") is False and 0.25 <= took < 5,
      "thread 2 is refused after waiting %.2f s (wait_ms 300): %s" % (took, r))
check(ext(w, 1, k).get("extended") is True, "thread 1 extends its lock")
r = rel(w, 1, k)
check(r.get("type") == "release_ok", "thread 1 releases: %s" % r)
check(acq(w, 2, k).get("granted") is True, "thread 2 acquires it after the release")
check(rel(w, 2, k).get("type") == "release_ok", "thread 2 releases")
r = rel(w, 3, k)
check(r.get("type") == "error" and r.get("code") == 40, "release by thread 3, which never held it: 40: %s" % r.get("text"))
r = ext(w, 3, k)
check(r.get("type") == "error" and r.get("code") == 40, "extend by thread 3, which never held it: 40: %s" % r.get("text"))

# A lease that runs out while another thread takes the lock: what the library says to its old holder.
k = prefix + "-lost"
check(acq(w, 1, k, lease_ms=300).get("granted") is True, "thread 1 acquires %s with a 300 ms lease" % k)
check(acq(w, 2, k, wait_ms=3000, lease_ms=5000).get("granted") is True, "thread 2 takes it once the lease ran out")
m = re.match(r"v4\.0\.(\d+)$", version)
buggy = lib == "redsync" and m is not None and int(m.group(1)) <= 3
r = ext(w, 1, k, lease_ms=300)
if buggy:
    check(r.get("extended") is True, "redsync %s: Extend says extended on the lost lock (the bug fixed in v4.0.4): %s" % (version, r))
else:
    check(r.get("type") == "extend_ok" and r.get("extended") is False, "thread 1's extend of its lost lock: extended false: %s" % r)
r = rel(w, 1, k)
if buggy:
    check(r.get("type") == "release_ok", "redsync %s: Unlock says released on the lost lock (the bug fixed in v4.0.4): %s" % (version, r))
else:
    check(r.get("type") == "error" and r.get("code") == 40, "thread 1's release of its lost lock: 40: %s" % r.get("text"))
check(rel(w, 2, k).get("type") == "release_ok", "thread 2 still held it and releases")

# client-pause as lockcheck does it: SIGSTOP one worker process past its lease while another process takes the
# lock, then SIGCONT. What the library tells the paused holder is what its application would act on.
import signal
wa, wb = Worker("mutex"), Worker("mutex")
k = prefix + "-pause"
check(acq(wa, 1, k, lease_ms=500).get("granted") is True, "worker A acquires %s with a 500 ms lease" % k)
wa.p.send_signal(signal.SIGSTOP)
r = acq(wb, 1, k, wait_ms=5000, lease_ms=10000)
wa.p.send_signal(signal.SIGCONT)
check(r.get("granted") is True, "worker B takes it while A is stopped")
r = ext(wa, 1, k, lease_ms=500)
if buggy:
    check(r.get("extended") is True, "redsync %s: resumed A's Extend says extended while B holds it (the bug): %s" % (version, r))
else:
    check(r.get("type") == "extend_ok" and r.get("extended") is False, "resumed A's extend: extended false: %s" % r)
r = rel(wa, 1, k)
check(r.get("type") == ("release_ok" if buggy else "error") and (buggy or r.get("code") == 40), "resumed A's release: %s" % r)
check(rel(wb, 1, k).get("type") == "release_ok", "B still held it and releases")
for x in (wa, wb):
    x.p.stdin.close()
    x.p.wait(5)

# Threads run concurrently: a waiting acquire does not hold up another thread's requests.
k = prefix + "-c"
check(acq(w, 1, k, lease_ms=5000).get("granted") is True, "thread 1 acquires " + k)
slow = w.send({"type": "acquire", "thread": 2, "keys": [k], "wait_ms": 1500, "lease_ms": 2000})
fast = [w.send({"type": "acquire", "thread": 10 + n, "keys": ["%s-%d" % (k, n)], "wait_ms": 0, "lease_ms": 2000}) for n in range(5)]
rs = [w.wait(f) for f in fast]
check(all(r.get("granted") is True for r in rs) and slow not in w.replies,
      "5 threads are granted their own keys while thread 2 still waits")
check(rel(w, 1, k).get("type") == "release_ok", "thread 1 releases while thread 2 waits")
r = w.wait(slow)
check(r.get("granted") is True, "thread 2's waiting acquire is granted once thread 1 released: %s" % r)
for n in range(5):
    rel(w, 10 + n, "%s-%d" % (k, n))
rel(w, 2, k)

# Redlock: the grant is a majority of the masters, checked from outside with redis-cli.
nodes = [n["addr"] for n in topology.get("nodes", [])] if topology.get("kind") == "redlock" else []
if len(nodes) >= 3 and shutil.which("redis-cli"):
    def cli(a, *args):
        h, p = a.rsplit(":", 1)
        return subprocess.run(["redis-cli", "-h", h, "-p", p, "-a", password, "--no-auth-warning", *args],
                              capture_output=True, text=True).stdout.strip()
    quorum = len(nodes) // 2 + 1
    k = prefix + "-q"
    check(acq(w, 1, k, lease_ms=5000).get("granted") is True and all(cli(a, "EXISTS", k) == "1" for a in nodes),
          "redlock: a grant sets the key on all %d masters" % len(nodes))
    rel(w, 1, k)
    check(all(cli(a, "EXISTS", k) == "0" for a in nodes), "redlock: the release deletes it on all of them")
    for held, want in ((len(nodes) - quorum, True), (quorum, False)):
        k = "%s-q%d" % (prefix, held)
        for a in nodes[:held]:
            cli(a, "SET", k, "someone-else", "PX", "5000")
        r = acq(w, 1, k, lease_ms=5000)
        check(r.get("granted") is want, "redlock: %d of %d masters held by another: granted %s: %s" % (held, len(nodes), want, r))
        if want:
            rel(w, 1, k)
        check(all(cli(a, "EXISTS", k) == "0" for a in nodes[held:]), "redlock: nothing left on the free masters")

# A Redis that stops answering: the call may have run there, so 0 (timeout, indefinite), not a refusal.
# timeout_ms 300: go-redis retries a read timeout 3 times, which must all fit in the 4 s pause.
if topology.get("kind") == "single" and shutil.which("redis-cli"):
    a = topology["nodes"][0]["addr"]
    h, p = a.rsplit(":", 1)
    k = prefix + "-t"
    wt = Worker("mutex", timeout_ms=300)
    check(acq(wt, 1, k, lease_ms=10000).get("granted") is True, "thread 1 acquires " + k)
    t0 = time.monotonic()
    subprocess.run(["redis-cli", "-h", h, "-p", p, "-a", password, "--no-auth-warning", "CLIENT", "PAUSE", "4000", "ALL"],
                   capture_output=True)
    r = ext(wt, 1, k, lease_ms=10000)
    check(r.get("type") == "error" and r.get("code") == 0 and time.monotonic() - t0 < 4,
          "extend while Redis is paused past timeout_ms: 0 within the pause: %s" % (r.get("text") or r))
    time.sleep(max(0, 4.5 - (time.monotonic() - t0)))
    check(rel(wt, 1, k).get("type") == "release_ok", "thread 1 releases once Redis answers again")
    wt.p.stdin.close()
    wt.p.wait(5)

# A master nobody listens on: the command was never sent, so 11 (unavailable, definite).
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
dead = "127.0.0.1:%d" % s.getsockname()[1]
s.close()
wd = Worker("mutex", topo={"kind": "single", "nodes": [{"name": "n1", "addr": dead}]})
r = acq(wd, 1, prefix + "-dead")
# 0 is honest too: a library that bounds each attempt (later redsync v4: expiry x 0.05) while go-redis v9
# retries the dial answers "context deadline exceeded".
check(r.get("type") == "error" and r.get("code") in (0, 11), "acquire on a closed port: 11 (or 0): %s" % r.get("text"))
wd.p.stdin.close()
wd.p.wait(5)

r = w.call({"type": "acquire", "thread": 1, "keys": [k, k + "x"], "wait_ms": 0, "lease_ms": 1000})
check(r.get("type") == "error" and r.get("code") == 10, "two keys: 10 not-supported: %s" % r.get("text"))
r = w.call({"type": "acquire_permits", "thread": 1, "key": k, "n": 1, "wait_ms": 0})
check(r.get("type") == "error" and r.get("code") == 10, "a semaphore request: 10 not-supported: %s" % r.get("text"))
mid = w.next
w.next += 1
w.p.stdin.write('{"type":"acquire","msg_id":%d,"thread":"one","keys":[1]}\n' % mid)
w.p.stdin.flush()
r = w.wait(mid)
check(r.get("type") == "error" and r.get("code") == 12, "a malformed request: 12: %s" % r.get("text"))
r = w.call({"type": "shutdown"})
try:
    rc = w.p.wait(5)
except subprocess.TimeoutExpired:
    rc = None
    w.p.kill()
check(r.get("type") == "shutdown_ok" and rc == 0, "shutdown_ok, exit 0 (%s)" % rc)
check(not w.garbage, "nothing but JSON objects on stdout %s" % w.garbage[:3])

w = Worker("mutex")
w.p.stdin.close()
try:
    rc = w.p.wait(5)
except subprocess.TimeoutExpired:
    rc = None
    w.p.kill()
check(rc == 0, "exit 0 when stdin closes (%s)" % rc)

if failures:
    print("workers' stderr: " + logs)
else:
    shutil.rmtree(logs, ignore_errors=True)
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
PY
