#!/bin/sh
# faults.sh RUNCMD: starts three password-protected redis-servers on free loopback ports (stopped on exit)
# and checks the worker (RUNCMD, run by sh -c) on the `redlock` topology: a grant on every master, a
# definite refusal, a quorum with one master frozen (SIGSTOP), error 0 (timeout, indefinite) rather than a
# refusal with two frozen, a release retried once they are back; init errors (wrong password, unknown
# option, another family); on `sentinel`, the master Sentinel announces reached through init's nat; the
# worker under lockcheck's clock library (client-clock) judging its lock expired; and with a 5.x redlock, using(): the lock kept by its auto-extension and a
# `lost` event once another owner takes it. Needs node and redis-server.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: faults.sh RUNCMD" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/node-redlock-faults.XXXXXX")
pids=
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done # they write their last lines to $dir on the way out
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
password=faults-$$
free() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
args=
for i in 1 2 3; do
	port=$(free)
	redis-server --port "$port" --bind 127.0.0.1 --requirepass "$password" --save '' --appendonly no \
		--dir "$dir" --logfile "$dir/redis-$i.log" >/dev/null &
	pids="$pids $!"
	args="$args 127.0.0.1:$port=$!"
done
for a in $args; do
	port=${a#127.0.0.1:}
	port=${port%%=*}
	i=0
	until redis-cli -p "$port" -a "$password" --no-auth-warning ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "faults.sh: redis-server on $port did not start" >&2; exit 2; }
		sleep 0.1
	done
done
# A Sentinel that announces the master at a port where nothing listens: only a worker that maps the
# announced address through init's nat (to the first redis-server) reaches it.
sport=$(free)
ghost=$(free)
cat >"$dir/sentinel.conf" <<CONF
port $sport
bind 127.0.0.1
dir $dir
requirepass $password
sentinel monitor lockcheck 127.0.0.1 $ghost 1
sentinel auth-pass lockcheck $password
CONF
redis-sentinel "$dir/sentinel.conf" --logfile "$dir/sentinel.log" >/dev/null &
pids="$pids $!"
i=0
until redis-cli -p "$sport" -a "$password" --no-auth-warning ping >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "faults.sh: redis-sentinel on $sport did not start" >&2; exit 2; }
	sleep 0.1
done
# lockcheck's clock library (client-clock), when a C compiler is there: the worker started under it.
src=$here/../../node/clockshift/csrc/clockshift.c
if command -v "${CC:-cc}" >/dev/null && [ -f "$src" ] && "${CC:-cc}" -O2 -fPIC -shared -o "$dir/libclockshift.so" "$src"; then
	export CLOCKSHIFT_LIB="$dir/libclockshift.so" CLOCKSHIFT_FILE="$dir/clock"
else
	echo "faults.sh: no C compiler or no clockshift.c: the client-clock check is skipped" >&2
fi
# shellcheck disable=SC2086 # the addresses are one word each
SENTINEL=127.0.0.1:$sport GHOST=127.0.0.1:$ghost node "$here/test/faults.js" "$1" "$password" $args
