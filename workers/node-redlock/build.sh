#!/bin/sh
# build.sh VERSION OUTDIR: installs npm `redlock` VERSION ("" or "default": the one in DEFAULT_VERSION) and
# ioredis into OUTDIR (its own node_modules: nothing global) and leaves OUTDIR/run, which starts the worker
# (docs/protocol.md). npm's output goes to OUTDIR/build.log; a failure is one line on stderr, exit non-zero:
# 4 for a version the registry does not have (lockcheck's bad input).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 2 ] || [ -z "$2" ]; then
	echo "usage: build.sh VERSION OUTDIR" >&2
	exit 2
fi
version=$1
out=$2
if [ -z "$version" ] || [ "$version" = default ]; then
	version=$(cat "$here/DEFAULT_VERSION")
fi
# ioredis is the client both redlock majors are written for (5.x's README, 4.x's cluster advice); pinned
# so that a version's build does not change under it. IOREDIS_VERSION overrides.
ioredis=${IOREDIS_VERSION:-5.8.2}
case $version in
*[!0-9A-Za-z.+-]* | [!0-9]*)
	echo "build.sh: '$version' is not a redlock version (expected e.g. 4.2.0 or 5.0.0-beta.2)" >&2
	exit 4
	;;
esac
for tool in node npm; do
	command -v $tool >/dev/null || { echo "build.sh: $tool is not installed; it runs the node-redlock worker" >&2; exit 3; }
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/run"
log=$out/build.log
# A private package.json: npm installs into OUTDIR/node_modules only. Exact versions (--save-exact, no
# ranges), and no scripts: redlock and ioredis need none.
printf '{"name":"lockcheck-node-redlock-worker","private":true}\n' >"$out/package.json"
if ! (cd "$out" && npm install --no-audit --no-fund --ignore-scripts --save-exact --loglevel=error \
	"redlock@$version" "ioredis@$ioredis") >"$log" 2>&1; then
	if grep -q "ETARGET\|No matching version" "$log"; then
		# The registry's own words: "No matching version found for redlock@9.9.9."
		why=$(sed -n 's/^npm error notarget \(No matching version.*[^.]\)\.*$/\1/p' "$log" | head -n 1)
		echo "build.sh: npm: ${why:-no redlock $version}; unknown version (npm view redlock versions lists them)" >&2
		exit 4
	elif grep -q "ENOTFOUND\|EAI_AGAIN\|ECONNREFUSED\|ETIMEDOUT" "$log"; then
		echo "build.sh: the npm registry is not reachable (see $log)" >&2
	else
		echo "build.sh: npm failed to install redlock $version (see $log)" >&2
	fi
	exit 1
fi
# npm resolves a dist-tag or a range too: the worker must be the exact version asked for.
got=$(node -e 'console.log(String(require(process.argv[1]).version).replace(/^v/, ""))' "$out/node_modules/redlock/package.json")
if [ "$got" != "$version" ]; then
	echo "build.sh: npm installed redlock $got for '$version': give an exact version" >&2
	exit 1
fi
# After the install, so that a version npm does not have gets the registry's answer.
case $got in
[45].*) ;;
*)
	echo "build.sh: redlock $got: the worker drives the 4.x and 5.x APIs only" >&2
	exit 1
	;;
esac
cp "$here/worker.js" "$here/../node-lcp/lcp.js" "$out/"
echo "$version" >"$out/VERSION"
# run last, through a rename: its presence means the build is complete.
cat >"$out/run.tmp" <<'RUN'
#!/bin/sh
# Starts the lockcheck node-redlock worker (LCP/1 on stdin/stdout, logs on stderr). exec: the worker process
# is node itself, so SIGSTOP/SIGCONT and SIGKILL reach it; LD_PRELOAD (the clock fault) passes through.
dir=$(cd "$(dirname "$0")" && pwd)
exec node "$dir/worker.js" "$@"
RUN
chmod +x "$out/run.tmp"
mv "$out/run.tmp" "$out/run"
