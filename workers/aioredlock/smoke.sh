#!/bin/sh
# smoke.sh RUNCMD ADDR[,ADDR...] PASSWORD: checks a built aioredlock worker (OUTDIR/run) end to end against the
# Redis at ADDR (one node), or the independent masters at ADDR,ADDR,... (topology redlock), each with requirepass
# PASSWORD: init, acquire/release/extend, a refused acquire by a second thread, a waiting thread, a lease that
# ends, release of a lock not held, shutdown. Exit 0 = pass. SMOKE_STDERR=FILE keeps the worker's stderr.
set -eu
[ $# -eq 3 ] || { echo "usage: smoke.sh RUNCMD ADDR[,ADDR...] PASSWORD" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# aioredlock answers ok to the release of a key nobody holds (its unlock script returns OK when the key is gone).
SMOKE_FREE_RELEASE=ok exec python3 "$here/../lcp-python/smoke.py" aioredlock "$@"
