#!/bin/sh
# build.sh VERSION OUTDIR: installs npm `redis-semaphore` VERSION ("" or "default": DEFAULT_VERSION) and ioredis
# into OUTDIR (its own node_modules: nothing global) and leaves OUTDIR/run, which starts the worker
# (docs/protocol.md). npm's output goes to OUTDIR/build.log; a failure is one line on stderr, exit non-zero: 4 for
# a version the registry does not have (lockcheck's bad input).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] && [ -n "$2" ] || { echo "usage: build.sh VERSION OUTDIR" >&2; exit 2; }
version=$1
if [ -z "$version" ] || [ "$version" = default ]; then
	version=$(cat "$here/DEFAULT_VERSION")
fi
# ioredis, which redis-semaphore's README uses (a peer dependency: ^4.1 || ^5 || ^6), pinned so that a version's
# build does not change under it. IOREDIS_VERSION overrides.
ioredis=${IOREDIS_VERSION:-5.8.2}
case $version in
*[!0-9A-Za-z.+-]* | [!0-9]*)
	echo "build.sh: '$version' is not a redis-semaphore version (expected e.g. $(cat "$here/DEFAULT_VERSION"))" >&2
	exit 4
	;;
esac
for tool in node npm; do
	command -v $tool >/dev/null || { echo "build.sh: $tool is not installed; it runs the redis-semaphore worker" >&2; exit 3; }
done
mkdir -p "$2"
out=$(cd "$2" && pwd)
rm -f "$out/run"
log=$out/build.log
printf '{"name":"lockcheck-redis-semaphore-worker","private":true}\n' >"$out/package.json"
if ! (cd "$out" && npm install --no-audit --no-fund --ignore-scripts --save-exact --loglevel=error \
	"redis-semaphore@$version" "ioredis@$ioredis") >"$log" 2>&1; then
	if grep -q "ETARGET\|No matching version" "$log"; then
		echo "build.sh: npm has no redis-semaphore $version: unknown version (npm view redis-semaphore versions lists them)" >&2
		exit 4
	fi
	echo "build.sh: npm failed to install redis-semaphore $version (see $log)" >&2
	exit 1
fi
got=$(node -e 'console.log(require(process.argv[1]).version)' "$out/node_modules/redis-semaphore/package.json")
if [ "$got" != "$version" ]; then
	echo "build.sh: npm installed redis-semaphore $got for '$version': give an exact version" >&2
	exit 1
fi
cp "$here/worker.js" "$here/../node-lcp/lcp.js" "$out/"
echo "$version" >"$out/VERSION"
# run last, through a rename: its presence means the build is complete. exec: the worker process is node itself,
# so SIGSTOP/SIGCONT and SIGKILL reach it; LD_PRELOAD (the clock fault) passes through.
printf '#!/bin/sh\ndir=$(cd "$(dirname "$0")" && pwd)\nexec node "$dir/worker.js" "$@"\n' >"$out/run.tmp"
chmod +x "$out/run.tmp"
mv "$out/run.tmp" "$out/run"
