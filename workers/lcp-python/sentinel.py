"""sentinel.py KIND RUNCMD ADDR PASSWORD: a worker on a sentinel topology dials the master through `nat`.

Starts a redis-sentinel (loopback, free port, requirepass PASSWORD) monitoring the Redis at ADDR, and a TCP
forwarder standing for the client's proxy; `nat` maps the master's announced address to the forwarder. Checks
that the worker acquires, extends and releases, and that its master connections went through the forwarder
(none would without the remapping). Stops what it started. Used by test.sh for redis-py.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke import Worker, expect, fail, ok  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Forwarder(object):
    def __init__(self, target):
        self.target = target
        self.conns = 0
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.addr = "127.0.0.1:%d" % self.ls.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            c, _ = self.ls.accept()
            self.conns += 1
            t = socket.create_connection(self.target)
            for a, b in ((c, t), (t, c)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def main():
    kind, cmd, addr, password = sys.argv[1:5]
    host, port = addr.rsplit(":", 1)
    d = tempfile.mkdtemp(prefix="lcp-sentinel.")
    sport = free_port()
    with open(os.path.join(d, "sentinel.conf"), "w") as f:
        f.write("port %d\nbind 127.0.0.1\nrequirepass %s\ndir %s\nlogfile %s\n"
                "sentinel monitor lockcheck %s %s 1\nsentinel auth-pass lockcheck %s\n" % (
                    sport, password, d, os.path.join(d, "sentinel.log"), host, port, password))
    sentinel = subprocess.Popen(["redis-sentinel", os.path.join(d, "sentinel.conf")])
    try:
        for _ in range(100):  # ready when it names the master
            r = subprocess.run(["redis-cli", "-p", str(sport), "-a", password, "--no-auth-warning",
                                "sentinel", "get-master-addr-by-name", "lockcheck"], capture_output=True, text=True)
            if port in r.stdout:
                break
            time.sleep(0.1)
        else:
            fail("redis-sentinel on port %d did not name the master" % sport)
        fwd = Forwarder((host, int(port)))
        w = Worker(cmd)
        key = "sentinel-%s" % uuid.uuid4().hex[:8]
        r = w.call({"type": "init", "protocol": 1, "client": "c1", "seed": 1,
                    "topology": {"kind": "sentinel", "nodes": [{"name": "n1", "addr": fwd.addr}],
                                 "sentinels": ["127.0.0.1:%d" % sport], "master_name": "lockcheck",
                                 "nat": {addr: fwd.addr}},
                    "password": password, "lock": {"kind": kind, "family": "mutex"},
                    "options": {"lease_ms": 0, "watchdog_ms": 30000, "wait_ms": 5000, "timeout_ms": 2000},
                    "library_options": json.loads(os.environ.get("SMOKE_LIBRARY_OPTIONS") or "{}")}, timeout=60)
        expect(r, "init_ok", "init on a sentinel topology")
        expect(w.call({"type": "acquire", "thread": 1, "keys": [key], "wait_ms": 0, "lease_ms": 5000}),
               "acquire_ok", "thread 1 acquires through the Sentinel's master", granted=True)
        expect(w.call({"type": "extend", "thread": 1, "keys": [key], "lease_ms": 5000}), "extend_ok",
               "thread 1 extends", extended=True)
        expect(w.call({"type": "release", "thread": 1, "keys": [key]}), "release_ok", "thread 1 releases")
        expect(w.call({"type": "shutdown"}), "shutdown_ok", "shutdown")
        w.p.wait(5)
        if fwd.conns == 0:
            fail("no connection went through the nat-mapped address: the master was dialled as announced")
        ok("%d master connection(s) went through the nat-mapped address" % fwd.conns)
        print("PASS %s sentinel" % kind)
    finally:
        sentinel.terminate()
        sentinel.wait(10)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
