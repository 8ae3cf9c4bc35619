#!/bin/sh
# build-venv.sh NAME PACKAGE MODULE FOLDER [--with=REQ] VERSION OUTDIR: the build of a Python library's worker (redis-py,
# pottery, python-redis-lock, aioredlock): installs PACKAGE==VERSION ("" or "default": FOLDER/DEFAULT_VERSION) from PyPI into a virtualenv in
# OUTDIR, checks that MODULE imports, and leaves OUTDIR/run, which starts FOLDER/worker.py (docs/protocol.md) beside
# lcp.py and redisconn.py.
# pip's own output goes to OUTDIR/build.log; a failure is one line on stderr and a non-zero exit: 4 for a
# version PyPI does not have (lockcheck's bad input).
set -eu
name=$1 lib=$2 module=$3 here=$4
shift 4
# --with=REQ: one more requirement installed beside the library (aioredlock's releases before 0.7.3 do not pin
# aioredis below 2, whose API they do not speak).
extra=
case ${1:-} in --with=*)
	extra=${1#--with=}
	shift
	;;
esac
if [ $# -ne 2 ] || [ -z "$2" ]; then
	echo "usage: build.sh VERSION OUTDIR" >&2
	exit 2
fi
version=$1
if [ -z "$version" ] || [ "$version" = default ]; then
	version=$(cat "$here/DEFAULT_VERSION")
fi
case $version in
*[!0-9A-Za-z.+-]* | [!0-9]*)
	echo "build.sh: '$version' is not a $name version (expected e.g. $(cat "$here/DEFAULT_VERSION"))" >&2
	exit 4
	;;
esac
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "build.sh: $py is not installed; it runs the $name worker" >&2; exit 3; }
mkdir -p "$2"
out=$(cd "$2" && pwd)
rm -f "$out/run"
log=$out/build.log
: >"$log"
if [ ! -x "$out/venv/bin/python" ] && ! "$py" -m venv "$out/venv" >>"$log" 2>&1; then
	echo "build.sh: $py -m venv failed (see $log)" >&2
	exit 1
fi
# --no-deps is not used: the library's own dependencies (async-timeout etc.) come at the versions pip picks.
if ! "$out/venv/bin/python" -m pip install --disable-pip-version-check --no-input -q "$lib==$version" ${extra:+"$extra"} >>"$log" 2>&1; then
	# pip lists the versions it found: "(from versions: none)" is also what an unreachable index gives.
	if grep -qi "could not find a version" "$log" && ! grep -qi "from versions: none" "$log"; then
		newest=$(sed -n 's/.*(from versions: \(.*, \)*\([^,]*\)).*/\2/p' "$log" | head -n 1)
		echo "build.sh: PyPI has no $lib $version: unknown version${newest:+ (the newest is $newest)}" >&2
		exit 4
	elif grep -qi "no matching distribution\|could not find a version" "$log"; then
		echo "build.sh: PyPI has no $lib $version (or is not reachable): unknown version" >&2
	else
		echo "build.sh: pip failed to install $lib $version (see $log)" >&2
	fi
	exit 1
fi
# A release that installs but does not import (a dependency it forgot to declare) is a failed build.
if ! "$out/venv/bin/python" -c "import $module" >>"$log" 2>&1; then
	echo "build.sh: $lib $version installed but does not import on $("$out/venv/bin/python" -V 2>&1): $(tail -1 "$log")" >&2
	exit 1
fi
cp "$here/worker.py" "$here/../lcp-python/lcp.py" "$here/../lcp-python/redisconn.py" "$out/"
echo "$version" >"$out/VERSION"
# run last, through a rename: its presence means the build is complete.
cat >"$out/run.tmp" <<'RUN'
#!/bin/sh
# Starts a lockcheck Python library worker (LCP/1 on stdin/stdout, logs on stderr). -u: unbuffered; -s/-E: no
# user site or PYTHON* variables, so only the venv's packages load. LD_PRELOAD (the clock fault) passes through.
dir=$(cd "$(dirname "$0")" && pwd)
exec "$dir/venv/bin/python" -u -s -E "$dir/worker.py" "$@"
RUN
chmod +x "$out/run.tmp"
mv "$out/run.tmp" "$out/run"
