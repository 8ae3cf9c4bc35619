#!/bin/sh
# archive.sh OS ARCH VERSION COMMIT OUTDIR: one release archive, OUTDIR/lockcheck_VERSION_OS_ARCH.tar.gz, of a
# static, -trimpath lockcheck (the workers' sources are inside it: see embed.go) with the README and docs/.
# Prints the archive's path. make release runs it for each platform.
set -eu
if [ $# -ne 5 ]; then
	echo "usage: archive.sh OS ARCH VERSION COMMIT OUTDIR" >&2
	exit 2
fi
os=$1 arch=$2 version=$3 commit=$4 out=$5
root=$(cd "$(dirname "$0")/../.." && pwd)
name=lockcheck_${version}_${os}_${arch}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/lockcheck-release.XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
mkdir -p "$stage/$name"
cd "$root"
CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
	-ldflags "-s -w -X main.version=$version -X main.commit=$commit" -o "$stage/$name/lockcheck" ./cmd/lockcheck
cp README.md "$stage/$name/"
cp -R docs "$stage/$name/docs"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
