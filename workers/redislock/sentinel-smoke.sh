#!/bin/sh
# sentinel-smoke.sh RUNCMD: runs this worker on a Sentinel topology it starts itself on loopback: a master,
# a replica, one Sentinel (all with a password), and a counting TCP proxy in front of the master. nat maps
# the master's announced address to the proxy, as lockcheck's per-client proxies do. It runs smoke.sh on that
# topology, checks that the worker reached the master through the proxy, then makes a SENTINEL FAILOVER and
# checks that the worker's next acquire is granted on the new master. Stops everything it started. Needs
# python3, redis-server, redis-sentinel, redis-cli.
if [ $# -ne 1 ]; then
	echo "usage: sentinel-smoke.sh RUNCMD" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
exec python3 - "$1" "$here/smoke.sh" <<'PY'
import json, os, shutil, socket, subprocess, sys, tempfile, threading, time

run, smoke = sys.argv[1], sys.argv[2]
password = "sentinel-smoke-pw"
tmp = tempfile.mkdtemp(prefix="redislock-sentinel-")
procs, failures = [], 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failures += 0 if ok else 1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), "-a", password, "--no-auth-warning", *args],
                          capture_output=True, text=True).stdout.strip()


def wait_for(cond, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


class Proxy:
    """Forwards a loopback port to another and counts the connections it carried."""

    def __init__(self, target):
        self.target, self.count = target, 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            u = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((c, u), (u, c)):
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


try:
    master, replica, sentinel = free_port(), free_port(), free_port()
    for port, extra in ((master, []), (replica, ["--replicaof", "127.0.0.1", str(master)])):
        procs.append(subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--requirepass", password,
                                       "--masterauth", password, "--save", "", "--appendonly", "no", "--dir", tmp, *extra],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    conf = os.path.join(tmp, "sentinel.conf")
    with open(conf, "w") as f:
        f.write("bind 127.0.0.1\nport %d\ndir %s\nrequirepass %s\nsentinel monitor lockcheck 127.0.0.1 %d 1\n"
                "sentinel auth-pass lockcheck %s\nsentinel down-after-milliseconds lockcheck 1000\n"
                "sentinel failover-timeout lockcheck 5000\n" % (sentinel, tmp, password, master, password))
    procs.append(subprocess.Popen(["redis-sentinel", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    check(wait_for(lambda: "slave0:" in cli(master, "INFO", "replication") and
                   cli(sentinel, "SENTINEL", "get-master-addr-by-name", "lockcheck").split("\n")[-1:] == [str(master)]),
          "master %d, replica %d, Sentinel %d up" % (master, replica, sentinel))
    proxy = Proxy(master)
    topology = {"kind": "sentinel", "nodes": [{"name": "n1", "addr": "127.0.0.1:%d" % proxy.port}],
                "sentinels": ["127.0.0.1:%d" % sentinel], "master_name": "lockcheck",
                "nat": {"127.0.0.1:%d" % master: "127.0.0.1:%d" % proxy.port}}
    r = subprocess.run([smoke, run, json.dumps(topology), password], capture_output=True, text=True)
    check(r.returncode == 0, "smoke.sh on the Sentinel topology: %s" % r.stdout.strip().splitlines()[-1:])
    if r.returncode:
        print(r.stdout)
    check(proxy.count > 0, "the worker dialled the announced master through nat (%d connections)" % proxy.count)

    # A failover while the worker runs: it must follow Sentinel to the new master (not in nat: dialled as is).
    p = subprocess.Popen(["sh", "-c", "exec " + run], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
    mid = 0

    def call(m):
        global mid
        mid += 1
        p.stdin.write(json.dumps(dict(m, msg_id=mid)) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    init = call({"type": "init", "protocol": 1, "client": "c1", "seed": 1, "topology": topology, "password": password,
                 "lock": {"kind": "redislock", "family": "mutex"},
                 "options": {"lease_ms": 0, "watchdog_ms": 30000, "wait_ms": 0, "timeout_ms": 1000}, "library_options": {}})
    check(init.get("type") == "init_ok", "init_ok %s" % init.get("version"))
    k1, k2 = "sentinel-smoke-a-%d" % time.time_ns(), "sentinel-smoke-b-%d" % time.time_ns()
    a1 = call({"type": "acquire", "thread": 1, "keys": [k1], "wait_ms": 0, "lease_ms": 20000})
    check(a1.get("granted") is True and cli(master, "EXISTS", k1) == "1", "acquire on the first master %d" % master)
    # Sentinel learns of the replica from the master's INFO (every 10 s): until then FAILOVER says NOGOODSLAVE.
    check(wait_for(lambda: cli(sentinel, "SENTINEL", "FAILOVER", "lockcheck") == "OK", 30), "SENTINEL FAILOVER accepted")
    # Done once the old master is a replica too: before that it still takes writes (the asynchronous window).
    check(wait_for(lambda: cli(sentinel, "SENTINEL", "get-master-addr-by-name", "lockcheck").split("\n")[-1:] == [str(replica)]
                   and cli(replica, "ROLE").startswith("master") and cli(master, "ROLE").startswith("slave"), 30),
          "Sentinel promoted %d and demoted %d" % (replica, master))
    a2 = {}
    end = time.monotonic() + 20
    while time.monotonic() < end and a2.get("granted") is not True:
        a2 = call({"type": "acquire", "thread": 2, "keys": [k2], "wait_ms": 0, "lease_ms": 20000})
        if a2.get("granted") is not True:
            time.sleep(0.3)
    check(a2.get("granted") is True and cli(replica, "EXISTS", k2) == "1",
          "after the failover an acquire is granted on the new master %d: %s" % (replica, a2))
    call({"type": "shutdown"})
    p.wait(5)
finally:
    for q in procs:
        q.terminate()
    for q in procs:
        try:
            q.wait(5)
        except subprocess.TimeoutExpired:
            q.kill()
    shutil.rmtree(tmp, ignore_errors=True)
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
PY
