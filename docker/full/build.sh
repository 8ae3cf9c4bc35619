#!/bin/sh
# docker/full/build.sh: builds lockcheck/lockcheck:full with no image registry (needs root and a Docker engine).
#  1. this tree's inputs: a static, -trimpath lockcheck (the workers' sources are inside it), the clockshift
#     library, examples/. When the image's label names the same inputs, it stops there: "up to date".
#  2. base: Debian bookworm (debootstrap --variant=minbase) with the runtimes from Debian's packages, and this
#     host's Go toolchain (Debian's golang is older than go.mod's); kept under $LOCKCHECK_FULL_WORK per
#     package list and Go version.
#  3. a copy of the base with lockcheck in it, where `lockcheck workers build` prebuilds every shipped worker's
#     default version into /var/cache/lockcheck from Maven Central, npm, PyPI and the Go module proxy (in a
#     chroot); the registries' caches are dropped after.
#  4. docker import of that tree with docker/full/Dockerfile's settings as --change lines (a docker build over
#     a 1 GB layer copies it once per instruction on vfs storage).
# Environment: LOCKCHECK_FULL_WORK (default /var/tmp/lockcheck-full), LOCKCHECK_FULL_IMAGE (default
# lockcheck/lockcheck:full), DEBIAN_MIRROR (default http://deb.debian.org/debian), GO, CC, VERSION, COMMIT.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${LOCKCHECK_FULL_WORK:-/var/tmp/lockcheck-full}
image=${LOCKCHECK_FULL_IMAGE:-lockcheck/lockcheck:full}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
go=${GO:-go}
suite=bookworm
# maven needs a JDK (javac) for the Redisson worker; redis-server and redis-sentinel are what lockcheck starts;
# unzip reads the Lettuce version from Spring Data Redis's pom (workers/spring-integration/build.sh).
packages="ca-certificates openjdk-17-jdk-headless maven nodejs npm python3 python3-venv redis-server redis-sentinel unzip"
cache=/var/cache/lockcheck

say() { echo "build.sh: $*" >&2; }
die() {
	say "$*"
	exit 1
}
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (make docker-engine starts one)"
goroot=$("$go" env GOROOT)
gover=$("$go" env GOVERSION)
mkdir -p "$work"
work=$(cd "$work" && pwd)
case $work in /) die "LOCKCHECK_FULL_WORK may not be /" ;; esac

# Only /proc is mounted into a tree (the JDK's and Maven's setup need it; debootstrap made the /dev nodes), and
# no exit (error, Ctrl-C) leaves it mounted; a tree is never removed while anything is mounted under it.
mounted=""
unmount() {
	for m in $mounted; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
	mounted=""
}
trap 'unmount' EXIT
trap 'unmount; exit 130' INT TERM
mountproc() {
	mount -t proc proc "$1/proc"
	mounted="$1/proc $mounted"
}
removetree() {
	[ -e "$1" ] || return 0
	if grep -q " $1/" /proc/mounts; then die "$1 still has something mounted under it: not removing it"; fi
	rm -rf "$1"
}
# inroot ROOT CMD...: runs CMD in the chroot with a chosen environment (not this host's: PIP_FIND_LINKS etc.).
inroot() {
	r=$1
	shift
	chroot "$r" /usr/bin/env -i PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive LOCKCHECK_CACHE=$cache \
		GOMODCACHE=/tmp/gomod GOCACHE=/tmp/gocache GOTOOLCHAIN=local PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
		PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"
}
sha() { sha256sum | cut -c1-16; }
start=$(date +%s)

# 1. This tree's inputs.
basekey=$(printf '%s\n' "$suite" "$mirror" "$packages" "$gover" "$(sed -n '/^# base:begin/,/^# base:end/p' "$0")" | sha)
stage=$work/stage
removetree "$stage"
mkdir -p "$stage"
version=${VERSION:-$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev)}
commit=${COMMIT:-$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)}
(cd "$repo" && CGO_ENABLED=0 "$go" build -trimpath -ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
	-o "$stage/lockcheck" ./cmd/lockcheck) || die "go build of lockcheck failed"
${CC:-cc} -O2 -fPIC -shared -o "$stage/libclockshift.so" "$repo/node/clockshift/csrc/clockshift.c" || die "cc of clockshift failed"
cp -a "$repo/examples" "$stage/examples"
inputs=$( (
	echo "$basekey"
	cat "$0" "$here/Dockerfile"
	cd "$stage" && find . -type f | LC_ALL=C sort | xargs sha256sum
) | sha)
if [ "$(docker image inspect --format '{{index .Config.Labels "org.lockcheck.inputs"}}' "$image" 2>/dev/null)" = "$inputs" ]; then
	say "$image is up to date (inputs $inputs)"
	removetree "$stage"
	exit 0
fi

# 2. The base.
base=$work/base-$basekey
# base:begin
if [ ! -f "$base/.lockcheck-base" ]; then
	say "base $basekey: debootstrap $suite and apt-get install $packages"
	command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
		die "debootstrap is missing and could not be installed (apt-get install debootstrap)"
	removetree "$base.tmp"
	debootstrap --variant=minbase "$suite" "$base.tmp" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		die "debootstrap failed (see $work/debootstrap.log)"
	sec=$(echo "$mirror" | sed 's#/debian/*$#/debian-security#')
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" "$sec" "$suite" >"$base.tmp/etc/apt/sources.list"
	cp /etc/resolv.conf "$base.tmp/etc/resolv.conf"
	mountproc "$base.tmp"
	inroot "$base.tmp" sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages && apt-get clean" \
		>"$work/apt.log" 2>&1 || die "apt-get install in the base failed (see $work/apt.log)"
	unmount
	rm -rf "$base.tmp/var/lib/apt/lists"/* "$base.tmp/var/cache/apt"/*.bin
	# Go's toolchain without its own tests: the Go workers (redsync, redislock, the reference worker) build
	# with it, other versions at run time too.
	cp -a "$goroot" "$base.tmp/usr/local/go"
	rm -rf "$base.tmp/usr/local/go/test" "$base.tmp/usr/local/go/pkg/obj"
	echo "$basekey" >"$base.tmp/.lockcheck-base"
	mv "$base.tmp" "$base"
	for old in "$work"/base-*; do [ "$old" = "$base" ] || removetree "$old"; done
fi
# base:end

# 3. The tree: the base, lockcheck, and the workers built in it.
say "building the workers in a copy of base $basekey (inputs $inputs)"
root=$work/rootfs
removetree "$root"
cp -a "$base" "$root"
rm -f "$root/.lockcheck-base"
install -m 0755 "$stage/lockcheck" "$root/usr/bin/lockcheck"
install -D -m 0644 "$stage/libclockshift.so" "$root/usr/lib/lockcheck/libclockshift.so"
cp -a "$stage/examples" "$root/examples"
mkdir -p "$root/work"
# This host's extra certificate authorities (a TLS-inspecting egress proxy), for the builds only: taken out
# again below, so the image trusts Debian's list alone.
extra=$(ls /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)
if [ -n "$extra" ]; then
	mkdir -p "$root/usr/local/share/ca-certificates/lockcheck-build"
	cp $extra "$root/usr/local/share/ca-certificates/lockcheck-build/"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mountproc "$root"
inroot "$root" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed"
inroot "$root" lockcheck workers build || die "lockcheck workers build failed in the image's tree (logs: $root$cache/workers/*/*.build.log)"
rm -rf "$root/usr/local/share/ca-certificates/lockcheck-build"
inroot "$root" update-ca-certificates --fresh >/dev/null 2>&1 || die "update-ca-certificates --fresh failed"
unmount
# What the builds left outside the cache: the registries' and Go's caches, the host's resolver.
rm -rf "$root/root/.m2" "$root/root/.npm" "$root/root/.cache" "$root/tmp"/* "$root/tmp"/.[!.]* 2>/dev/null || true
: >"$root/etc/resolv.conf"

# 4. Import, with the Dockerfile's settings.
say "docker import as $image"
set --
while IFS= read -r line; do
	case $line in
	ENV\ * | WORKDIR\ * | ENTRYPOINT\ * | CMD\ * | USER\ *) set -- "$@" --change "$line" ;;
	LABEL\ *) set -- "$@" --change "$(echo "$line" | sed "s/\${INPUTS}/$inputs/")" ;;
	esac
done <"$here/Dockerfile"
previous=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
tar -C "$root" --numeric-owner -cf - . | docker import "$@" - "$image" >/dev/null || die "docker import failed"
# The image this one replaces (a whole second copy on vfs), unless a container still uses it.
[ -z "$previous" ] || docker rmi "$previous" >/dev/null 2>&1 || true
removetree "$root"
removetree "$stage"
say "built $image in $(($(date +%s) - start))s, $(docker image inspect --format '{{.Size}}' "$image") bytes"
