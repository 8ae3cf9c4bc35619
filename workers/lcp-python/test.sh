#!/bin/sh
# test.sh WORKER VERSION...: builds workers/WORKER (redis-py or pottery) at each VERSION from PyPI and tests it
# end to end against real redis-servers on loopback with a password: smoke.sh on one node (and, for pottery, on
# three independent masters), then faults.py (Redis frozen during a release: the answer must be indefinite)
# and, for redis-py, sentinel.py (a sentinel topology whose master is dialled through nat), then the same three
# on redis.asyncio (library option asyncio=true, lcp.py's asyncio mode) for versions that have it.
# Prints the build time, cache size and time to init_ok per version. OUT=DIR keeps the builds (default: a
# temporary directory, removed). Exit 0 when every version passes.
set -eu
[ $# -ge 2 ] || { echo "usage: test.sh redis-py|pottery VERSION..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
worker=$1
shift
[ -x "$here/../$worker/build.sh" ] || { echo "test.sh: no worker $worker" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "test.sh: redis-server is not installed" >&2; exit 3; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lcp-python-test.XXXXXX")
out=${OUT:-$tmp/builds}
pids=""
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	for p in $pids; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
pw=lcp-test-$$
addrs=""
for i in 1 2 3; do
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$tmp/r$i"
	redis-server --port "$port" --bind 127.0.0.1 --requirepass "$pw" --save '' --appendonly no \
		--dir "$tmp/r$i" --logfile "$tmp/r$i/log" &
	pids="$pids $!"
	addrs="$addrs${addrs:+,}127.0.0.1:$port"
	n=0 # ready when it answers PING with the password
	until redis-cli -p "$port" -a "$pw" --no-auth-warning ping 2>/dev/null | grep -q PONG; do
		n=$((n + 1))
		[ $n -lt 100 ] || { echo "test.sh: redis-server on port $port did not start" >&2; exit 1; }
		sleep 0.1
	done
done
one=${addrs%%,*}
pid1=$(echo $pids | cut -d' ' -f1)
pid2=$(echo $pids | cut -d' ' -f2)
failed=0
for v in "$@"; do
	dir=$out/$worker-$v
	start=$(date +%s)
	if ! "$here/../$worker/build.sh" "$v" "$dir"; then
		echo "FAIL $worker $v: build"
		failed=1
		continue
	fi
	echo "built $worker $v in $(($(date +%s) - start))s, $(du -sh "$dir" | cut -f1)"
	export SMOKE_STDERR="$dir/smoke-stderr.log"
	ok=1
	python3 "$here/smoke.py" "$worker" "$dir/run" "$one" "$pw" || ok=0
	if [ "$worker" = pottery ]; then
		python3 "$here/smoke.py" "$worker" "$dir/run" "$addrs" "$pw" || ok=0
		python3 "$here/faults.py" "$worker" "$dir/run" "$addrs" "$pw" "$pid1,$pid2" || ok=0
	else
		python3 "$here/faults.py" "$worker" "$dir/run" "$one" "$pw" "$pid1" || ok=0
		python3 "$here/sentinel.py" "$worker" "$dir/run" "$one" "$pw" || ok=0
		# redis.asyncio's Lock (4.2 on): the same three tests on lcp.py's asyncio mode.
		if "$dir/venv/bin/python" -c 'import redis.asyncio.lock' 2>/dev/null; then
			export SMOKE_LIBRARY_OPTIONS='{"asyncio":"true"}'
			python3 "$here/smoke.py" "$worker" "$dir/run" "$one" "$pw" || ok=0
			python3 "$here/faults.py" "$worker" "$dir/run" "$one" "$pw" "$pid1" || ok=0
			python3 "$here/sentinel.py" "$worker" "$dir/run" "$one" "$pw" || ok=0
			unset SMOKE_LIBRARY_OPTIONS
		fi
	fi
	if [ $ok = 1 ]; then echo "PASS $worker $v"; else echo "FAIL $worker $v (worker stderr: $SMOKE_STDERR)"; failed=1; fi
done
exit $failed
