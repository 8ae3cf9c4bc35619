"""faults.py KIND RUNCMD ADDR[,ADDR...] PASSWORD PID[,PID...]: a worker's error codes while Redis is frozen.

Freezes the given redis-server processes (SIGSTOP; a majority of the masters on redlock) while the worker
holds a lock, and checks that its release fails as indefinite (code 0, timeout: the command may run when
Redis resumes), never as a definite code; then resumes them and says whether the release did run (with
redis-py 3+ it does: the script was sent; redis-py 2.10.6 times out on WATCH and never sends the DEL).
Exits 1 on the first failure. Used by test.sh.
"""

import json
import os
import signal
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke import Worker, expect, fail, ok, topology  # noqa: E402


def main():
    kind, cmd, addr, password, pids = sys.argv[1:6]
    pids = [int(p) for p in pids.split(",")]
    w = Worker(cmd)
    key = "faults-%s" % uuid.uuid4().hex[:8]
    r = w.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1, "topology": topology(addr),
                "password": password, "lock": {"kind": kind, "family": "mutex"},
                "options": {"lease_ms": 0, "watchdog_ms": 30000, "wait_ms": 5000, "timeout_ms": 500},
                "library_options": json.loads(os.environ.get("SMOKE_LIBRARY_OPTIONS") or "{}")}, timeout=60)
    expect(r, "init_ok", "init (timeout_ms 500)")
    expect(w.call({"type": "acquire", "thread": 1, "keys": [key], "wait_ms": 0, "lease_ms": 20000}),
           "acquire_ok", "thread 1 acquires (lease 20 s)", granted=True)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        t0 = time.time()
        r = w.call({"type": "release", "thread": 1, "keys": [key]}, timeout=60)
        took = time.time() - t0
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)
    if r.get("type") != "error" or r.get("code") != 0:
        fail("release while Redis is frozen: want error code 0 (timeout, indefinite), got %s" % json.dumps(r))
    ok("release while %d redis-server(s) frozen: code 0 after %.1fs (%s)" % (len(pids), took, r.get("text")))
    # Either outcome is possible after a timeout, which is why only an indefinite code is right.
    r = w.call({"type": "acquire", "thread": 2, "keys": [key], "wait_ms": 3000, "lease_ms": 5000})
    if r.get("type") != "acquire_ok":
        fail("acquire after Redis resumed: %s" % json.dumps(r))
    ok("after Redis resumed, the timed-out release %s" % ("had run" if r.get("granted") else "had not run"))
    if r.get("granted"):
        expect(w.call({"type": "release", "thread": 2, "keys": [key]}), "release_ok", "thread 2 releases")
    expect(w.call({"type": "shutdown"}), "shutdown_ok", "shutdown")
    if w.p.wait(5) != 0:
        fail("worker exited non-zero")
    print("PASS %s faults" % kind)


if __name__ == "__main__":
    main()
