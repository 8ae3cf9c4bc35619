#!/bin/sh
# smoke.sh RUNCMD ADDR PASSWORD: checks a built python-redis-lock worker (OUTDIR/run) end to end against the Redis
# at ADDR (host:port, a single node with requirepass PASSWORD): init, acquire/release/extend, a refused acquire
# by a second thread, a waiting thread, a lease that ends, release of a lock not held, shutdown. Exit 0 = pass.
# SMOKE_STDERR=FILE keeps the worker's stderr.
set -eu
[ $# -eq 3 ] || { echo "usage: smoke.sh RUNCMD ADDR PASSWORD" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/../lcp-python/smoke.py" python-redis-lock "$@"
