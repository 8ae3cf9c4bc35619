#!/bin/sh
# smoke.sh RUNCMD ADDR PASSWORD: drives a mutex-family LCP/1 worker (RUNCMD, run by sh -c) against the
# Redis at ADDR (host:port, loopback) on a `single` topology and checks, by the protocol replies and by
# reading the keys in Redis: init, acquire, a second thread refused, a wait that is granted when the holder
# releases, extend (the TTL really moves), concurrent threads, release, release of a lock never held and of
# one that expired and was taken by another thread (error 40, the other's lock untouched), shutdown.
# Prints one line per check and the start-up time to init_ok; exits 0 only if every check passed.
# Needs node, nothing else (the checks are test/smoke.js).
set -eu
if [ $# -ne 3 ]; then
	echo "usage: smoke.sh RUNCMD ADDR PASSWORD" >&2
	exit 2
fi
exec node "$(dirname "$0")/test/smoke.js" "$@"
