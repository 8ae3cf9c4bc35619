#!/bin/sh
# scripts/aioredlock-split-votes.sh [SECONDS]: aioredlock with no fault at all, over 5 local masters: 8
# processes of one lock manager and 2 contending tasks each (as lockcheck's 8 worker processes of 2 threads,
# which call lock() again at once after a refusal, holding 10-200 ms), and a sampler that reads the lock's key
# on every master every 20 ms. It prints the grants and refusals, and the samples by what the masters hold:
# "split" is a sample where masters are set but no value is on a majority, a vote in which every caller is
# refused while no one holds the lock. docs/findings.md cites it for aioredlock's porcupine-only finding on
# redlock. Needs redis-server; uses the aioredlock 0.7.3 worker's venv from lockcheck's cache, or builds one
# from PyPI into a temporary directory. Loopback only; every process it starts is stopped on exit.
set -eu
secs=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${LOCKCHECK_CACHE:-$HOME/.cache/lockcheck}
py=$cache/workers/aioredlock/0.7.3/venv/bin/python
tmp=$(mktemp -d)
pids="" # the clients first, then the servers they talk to
cleanup() {
	for p in $pids ${servers:-}; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ ! -x "$py" ]; then
	"$root/workers/aioredlock/build.sh" 0.7.3 "$tmp/aio" >/dev/null
	py=$tmp/aio/venv/bin/python
fi
pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
ports=$("$py" -c 'import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
print(",".join(str(s.getsockname()[1]) for s in ss))')
for p in $(echo "$ports" | tr , ' '); do
	printf 'port %s\nbind 127.0.0.1\nrequirepass %s\nsave ""\nappendonly no\ndir %s\n' "$p" "$pw" "$tmp" >"$tmp/$p.conf"
	redis-server "$tmp/$p.conf" >"$tmp/$p.log" 2>&1 &
	servers="${servers:-} $!"
done
cat >"$tmp/split.py" <<'PY'
import asyncio, collections, os, random, sys, time
import aioredis, aioredlock
from aioredlock.errors import LockAcquiringError
ports, secs, role = [int(p) for p in sys.argv[1].split(",")], float(sys.argv[2]), sys.argv[3]
pw, stats = os.environ["SPLIT_PW"], collections.Counter()

async def connect():
    for _ in range(100):  # the servers are starting
        try:
            return [await aioredis.create_redis(("127.0.0.1", p), password=pw, encoding="utf-8") for p in ports]
        except OSError:
            await asyncio.sleep(0.1)
    raise SystemExit("the masters did not answer")

async def contend(mgr, stop):
    while time.monotonic() < stop:
        try:
            lk = await mgr.lock("lock-0", lock_timeout=30)
        except LockAcquiringError:
            stats["refused"] += 1
            continue
        except aioredlock.LockError:
            stats["error"] += 1
            continue
        stats["granted"] += 1
        await asyncio.sleep(random.uniform(0.01, 0.2))
        await mgr.unlock(lk)

async def sample(conns, stop):
    while time.monotonic() < stop:
        vals = [v for v in await asyncio.gather(*[c.get("lock-0") for c in conns]) if v]
        top = max(collections.Counter(vals).values()) if vals else 0
        stats["sample: " + ("a majority holds" if top >= 3 else "split, no majority" if vals else "free")] += 1
        await asyncio.sleep(0.02)

async def main():
    conns = await connect()
    stop = time.monotonic() + secs
    if role == "sample":
        await sample(conns, stop)
    else:
        mgr = aioredlock.Aioredlock([{"host": "127.0.0.1", "port": p, "password": pw} for p in ports])
        await asyncio.gather(contend(mgr, stop), contend(mgr, stop))
    for k, v in sorted(stats.items()):
        print("%s\t%d" % (k, v))

asyncio.run(main())
PY
export SPLIT_PW="$pw"
contenders=""
for i in 1 2 3 4 5 6 7 8; do
	"$py" "$tmp/split.py" "$ports" "$secs" contend >"$tmp/c$i.out" 2>&1 &
	contenders="$contenders $!"
done
pids="$contenders"
"$py" "$tmp/split.py" "$ports" "$secs" sample >"$tmp/sample.out" 2>&1 &
sampler=$!
pids="$sampler $pids"
# wait (not a foreground child) lets a signal run the trap at once
for p in $sampler $contenders; do wait "$p" || true; done
cat "$tmp"/c*.out "$tmp/sample.out" | awk -F'\t' 'NF == 2 { n[$1] += $2 } END { for (k in n) print k ": " n[k] }' | sort
