#!/bin/sh
# build.sh VERSION OUTDIR: builds the lockcheck redislock worker against github.com/bsm/redislock at
# VERSION ("" or "default": DEFAULT_VERSION) from the Go module proxy, and leaves OUTDIR/worker (a static
# binary, CGO_ENABLED=0) and OUTDIR/run, which starts it (docs/protocol.md). The build runs in a private
# copy of this folder with a private module cache under OUTDIR, removed afterwards; go's output goes to
# OUTDIR/build.log. A failure is one line on stderr and a non-zero exit: 2 usage, 4 a version the registry
# does not have (lockcheck's bad input), 1 anything else.
set -eu
module=github.com/bsm/redislock
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
case $version in
v0.*) ;;
*)
	echo "build.sh: '$version' is not a redislock version (expected e.g. v0.9.4 or $(cat "$here/DEFAULT_VERSION"))" >&2
	exit 4
	;;
esac
command -v go >/dev/null || { echo "build.sh: go is not installed; it builds the redislock worker" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/run"
work=$(mktemp -d "${TMPDIR:-/tmp}/lockcheck-redislock-build.XXXXXX")
export GOMODCACHE="$out/.modcache" GOFLAGS="${GOFLAGS:-} -modcacherw" CGO_ENABLED=0
cleanup() { rm -rf "$work" "$GOMODCACHE"; }
trap cleanup EXIT INT TERM
# Only the .go files: a fresh go.mod lets the library's own go.mod choose its go-redis, as a user's would.
cp "$here"/*.go "$here/../redsync/lcp.go" "$work/"
# In lockcheck's tree these files carry "//go:build ignore" (workers/embed.go says why); here they are
# the worker's own module.
sed -i -e '/^\/\/go:build ignore$/d' -e 's#^//go:build ignore && #//go:build #' "$work"/*.go
log=$out/build.log
: >"$log"
cd "$work"
# The registry's answer first, so that an unknown version is one clear line.
if ! go mod download -json "$module@$version" >"$work/dl.json" 2>>"$log"; then
	# go's JSON error may hold an escaped newline before the server's words: keep the first line.
	why=$(sed -n 's/.*"Error": "\(.*\)".*/\1/p' "$work/dl.json" | head -n 1 | sed 's/\\n.*//')
	printf 'build.sh: redislock %s is not on the Go module proxy: %s\n' "$version" "${why:-see $log}" >&2
	# The proxy's answer for a version it does not have (404/410, "unknown revision", or a mirror's "not
	# available") is bad input; anything else (no network, no DNS) is the build's failure.
	if grep -Eqi '404 Not Found|410 Gone|unknown revision|invalid version|not available' "$work/dl.json"; then
		exit 4
	fi
	exit 1
fi
if ! { go mod init lockcheck.local/workers/redislock && go mod edit -require="$module@$version" && go mod tidy && go build -trimpath -o "$out/worker.tmp" .; } >>"$log" 2>&1; then
	echo "build.sh: the worker does not build against redislock $version (see $log)" >&2
	exit 1
fi
mv "$out/worker.tmp" "$out/worker"
cp go.mod go.sum "$out/"
echo "$version" >"$out/VERSION"
# run last, through a rename: its presence means the build is complete.
cat >"$out/run.tmp" <<'RUN'
#!/bin/sh
# Starts the lockcheck redislock worker (LCP/1 on stdin/stdout, logs on stderr).
exec "$(dirname "$0")/worker" "$@"
RUN
chmod +x "$out/run.tmp"
mv "$out/run.tmp" "$out/run"
