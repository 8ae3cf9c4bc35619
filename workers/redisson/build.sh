#!/bin/sh
# build.sh VERSION OUTDIR: builds the lockcheck Redisson worker against Redisson VERSION ("" or "default":
# the one in DEFAULT_VERSION) with Maven and leaves OUTDIR/run, which starts it (docs/protocol.md).
# Maven's own output goes to OUTDIR/build.log; a failure is one line on stderr and a non-zero exit: 4 for
# a version Maven Central does not have (lockcheck's bad input).
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
case $version in
*[!0-9A-Za-z._-]* | [!0-9]*)
	echo "build.sh: '$version' is not a Redisson version (expected e.g. 3.16.6 or 4.7.0)" >&2
	exit 4
	;;
esac
command -v "${MVN:-mvn}" >/dev/null || { echo "build.sh: Maven (mvn) is not installed; it builds the Redisson worker" >&2; exit 3; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/run"
# A private copy of the project: concurrent builds of two versions must not share target/.
work=$(mktemp -d "${TMPDIR:-/tmp}/lockcheck-redisson-build.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp -R "$here/pom.xml" "$here/src" "$work/"
log=$out/build.log
maven() { "${MVN:-mvn}" -B -q -f "$work/pom.xml" -Dredisson.version="$version" "$@" package; }
# Offline first, so a cached version builds with no network; online only for what is missing.
if ! maven -o >"$log" 2>&1 && ! maven >"$log" 2>&1; then
	# "Could not find artifact" is the repository's own answer (a 404); a transfer error is not.
	if grep -q "Could not find artifact org.redisson:redisson:jar:$version" "$log"; then
		echo "build.sh: Maven Central has no Redisson $version: unknown version" >&2
		exit 4
	elif grep -q "org.redisson:redisson:jar:$version" "$log" && grep -Eqi "not found|could not find|failure to find|could not resolve" "$log"; then
		echo "build.sh: Redisson $version is not on Maven Central (or not reachable): unknown version" >&2
	elif grep -q "COMPILATION ERROR\|compilation failure\|Compilation failure" "$log"; then
		echo "build.sh: the worker does not compile against Redisson $version (see $log)" >&2
	else
		echo "build.sh: Maven failed to build the worker for Redisson $version (see $log)" >&2
	fi
	exit 1
fi
rm -rf "$out/lib"
cp -R "$work/target/lib" "$out/lib"
cp "$work/target/worker.jar" "$out/worker.jar"
echo "$version" >"$out/VERSION"
# run last, through a rename: its presence means the build is complete.
cat >"$out/run.tmp" <<'RUN'
#!/bin/sh
# Starts the lockcheck Redisson worker (LCP/1 on stdin/stdout, logs on stderr). The environment, with
# JAVA_TOOL_OPTIONS and LD_PRELOAD (the clock fault), passes through to the JVM.
# The --add-opens are for Redisson before 3.13, whose default codec (FST) reflects into the JDK's classes
# as the Java 8 it was written for allowed; newer versions do not need them, and they change nothing there.
dir=$(cd "$(dirname "$0")" && pwd)
# Options are prepended to the arguments (set --), so that a directory with spaces survives.
set -- -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
	-jar "$dir/worker.jar" "$@"
for p in java.lang java.lang.reflect java.util java.util.concurrent java.util.concurrent.atomic java.math java.net \
	java.text java.time java.io java.nio sun.nio.ch; do
	set -- --add-opens "java.base/$p=ALL-UNNAMED" "$@"
done
set -- --add-opens java.sql/java.sql=ALL-UNNAMED "$@"
# worker.jsa (made by build.sh) is a class-data archive of the classes a start-up loads: a quicker start.
if [ -n "${LOCKCHECK_CDS_DUMP:-}" ]; then
	set -- "-XX:ArchiveClassesAtExit=$LOCKCHECK_CDS_DUMP" "$@"
elif [ -f "$dir/worker.jsa" ]; then
	set -- "-XX:SharedArchiveFile=$dir/worker.jsa" "$@"
fi
# The JVM's own messages go to stderr: by default they would go to stdout, which is the protocol's.
exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -Xlog:disable -Xlog:all=warning:stderr \
	-XX:+UseSerialGC -Xss512k -Xmx256m -XX:TieredStopAtLevel=1 "$@"
RUN
chmod +x "$out/run.tmp"
# The archive: one start-up whose init fails at once (nothing listens on port 1) loads most of what a real
# one does. Best effort: without it the worker starts all the same, a little slower.
rm -f "$out/worker.jsa"
printf '%s\n' '{"type":"init","msg_id":1,"protocol":1,"client":"cds","topology":{"kind":"single","nodes":[{"name":"n1","addr":"127.0.0.1:1"}]},"lock":{"kind":"reentrant","family":"mutex"},"options":{"timeout_ms":100},"library_options":{"retryAttempts":"0","connectTimeout":"100"}}' |
	JAVA_TOOL_OPTIONS= LD_PRELOAD= LOCKCHECK_CDS_DUMP="$out/worker.jsa" "$out/run.tmp" >>"$log" 2>&1 || true
mv "$out/run.tmp" "$out/run"
