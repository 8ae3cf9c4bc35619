#!/bin/sh
# build.sh VERSION OUTDIR: builds the lockcheck Spring Integration worker (RedisLockRegistry) against
# org.springframework.integration:spring-integration-redis VERSION ("" or "default": DEFAULT_VERSION) with Maven
# and leaves OUTDIR/run, which starts it (docs/protocol.md). It shares the Redisson worker's JSON and output helpers
# (../redisson/src/main/java/lockcheck/Json.java, Lcp.java). Maven's output goes to OUTDIR/build.log; a failure is one line
# on stderr and a non-zero exit: 4 for a version Maven Central does not have (lockcheck's bad input).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] && [ -n "$2" ] || { echo "usage: build.sh VERSION OUTDIR" >&2; exit 2; }
version=$1
if [ -z "$version" ] || [ "$version" = default ]; then
	version=$(cat "$here/DEFAULT_VERSION")
fi
case $version in
*[!0-9A-Za-z._-]* | [!0-9]*)
	echo "build.sh: '$version' is not a spring-integration-redis version (expected e.g. 6.5.10 or 7.1.3)" >&2
	exit 4
	;;
esac
command -v "${MVN:-mvn}" >/dev/null || { echo "build.sh: Maven (mvn) is not installed; it builds the Spring Integration worker" >&2; exit 3; }
mkdir -p "$2"
out=$(cd "$2" && pwd)
rm -f "$out/run"
# A private copy of the project: concurrent builds of two versions must not share target/.
work=$(mktemp -d "${TMPDIR:-/tmp}/lockcheck-spring-build.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp -R "$here/pom.xml" "$here/src" "$work/"
cp "$here/../redisson/src/main/java/lockcheck/Json.java" "$here/../redisson/src/main/java/lockcheck/Lcp.java" "$work/src/main/java/lockcheck/"
log=$out/build.log
maven() { "${MVN:-mvn}" -B -q -f "$work/pom.xml" -Dspring.integration.version="$version" "$@"; }
# Offline first, so a cached version builds with no network; online only for what is missing. The first pass
# resolves spring-integration-redis and its Spring Data Redis; the second adds the Lettuce that release names.
deps="dependency:copy-dependencies -DoutputDirectory=$work/deps"
if maven -o $deps >"$log" 2>&1 || maven $deps >"$log" 2>&1; then
	sdr=$(ls "$work"/deps/spring-data-redis-*.jar 2>/dev/null | head -n 1)
	lettuce=$(unzip -p "$sdr" META-INF/maven/org.springframework.data/spring-data-redis/pom.xml 2>>"$log" |
		sed -n 's:.*<lettuce>\(.*\)</lettuce>.*:\1:p' | head -n 1)
	[ -n "$lettuce" ] || { echo "build.sh: no Lettuce version in ${sdr:-Spring Data Redis}'s pom (see $log)" >&2; exit 1; }
	set -- -Dlettuce.version="$lettuce" package
else
	set -- package # its failure below says why
fi
if ! maven -o "$@" >>"$log" 2>&1 && ! maven "$@" >>"$log" 2>&1; then
	if grep -q "Could not find artifact org.springframework.integration:spring-integration-redis:jar:$version" "$log"; then
		echo "build.sh: Maven Central has no spring-integration-redis $version: unknown version" >&2
		exit 4
	elif grep -q "COMPILATION ERROR\|Compilation failure" "$log"; then
		echo "build.sh: the worker does not compile against spring-integration-redis $version (see $log)" >&2
	else
		echo "build.sh: Maven failed to build the worker for spring-integration-redis $version (see $log)" >&2
	fi
	exit 1
fi
rm -rf "$out/lib"
cp -R "$work/target/lib" "$out/lib"
cp "$work/target/worker.jar" "$out/worker.jar"
echo "$version" >"$out/VERSION"
# run last, through a rename: its presence means the build is complete. The environment, with JAVA_TOOL_OPTIONS
# and LD_PRELOAD (the clock fault), passes through to the JVM, whose own messages go to stderr.
cat >"$out/run.tmp" <<'RUN'
#!/bin/sh
dir=$(cd "$(dirname "$0")" && pwd)
exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -Xlog:disable -Xlog:all=warning:stderr -XX:+UseSerialGC -Xss512k -Xmx256m \
	-XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.showDateTime=true -jar "$dir/worker.jar" "$@"
RUN
chmod +x "$out/run.tmp"
mv "$out/run.tmp" "$out/run"
