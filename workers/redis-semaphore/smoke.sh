#!/bin/sh
# smoke.sh RUNCMD ADDR PASSWORD: checks a built redis-semaphore worker (OUTDIR/run) end to end against the Redis at
# ADDR (host:port, a single node with requirepass PASSWORD): smoke.py's checks (the refresh, a waiting thread,
# onLockLost's event, a fixed lease). Needs python3 and redis-cli. Exit 0 = pass. SMOKE_STDERR=FILE keeps the
# worker's stderr.
set -eu
[ $# -eq 3 ] || { echo "usage: smoke.sh RUNCMD ADDR PASSWORD" >&2; exit 2; }
exec python3 "$(dirname "$0")/smoke.py" "$@"
