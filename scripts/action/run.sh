#!/usr/bin/env bash
# The steps of the GitHub Action (action.yml at the repository root), in one script so that they run, and
# are tested, the same way outside GitHub: `bash scripts/action/run.sh STEP`, the action's inputs in
# INPUT_<NAME> variables (upper case, dashes as underscores), as action.yml passes them.
#
#   prepare   Redis from Debian's packages when it is missing; the Go version the action's go.mod asks for
#             and whether the runner's Go is older (then action.yml runs actions/setup-go)
#   keys      the cache's paths and keys (Go's caches and lockcheck's worker cache)
#   build     lockcheck from the action's own source, into $RUNNER_TEMP/lockcheck-action/
#   run       lockcheck suite INPUT_SUITE, or a one-entry suite made from the run inputs (lock, lock-spec,
#             client, client-cmd, ...), on INPUT_SERVER (suite --server) when given, or lockcheck merge
#             INPUT_MERGE (earlier jobs' results); then the verdict policy (decide)
#   decide N  the policy alone: how lockcheck's exit code N ends the step
#
# Outputs go to $GITHUB_OUTPUT (when set) as NAME=VALUE lines; messages are workflow commands (::error::),
# which read as plain lines outside GitHub. Bad input exits 254 with one line, as lockcheck does.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) # the action's checkout: go.mod, cmd/, workers/
# The inputs, as inputs() and policy() read them.
suite="" merge="" explore="" lock="" spec="" client="" cmd="" nemesis="" topology="" seeds="" rtime="" results="" keep=""
shard="" parallel="" budget="" artifact="" server="" fou=false seeds_yaml="" sleep_words=() flag_lines=()

say() { printf 'lockcheck-action: %s\n' "$*"; }
fail() { # one line, exit 254: the input was wrong, nothing ran
	printf '::error::lockcheck action: %s\n' "$*" >&2
	exit 254
}
output() {
	say "output $1=$2"
	if [ -n "${GITHUB_OUTPUT:-}" ]; then printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; fi
}
sudo_if_needed() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		fail "$1 needs root and there is no sudo"
	fi
}

# trim VAR VALUE WHAT: VALUE without leading and trailing white space (a block scalar's newline) into VAR;
# one line only. It sets a variable rather than printing, so that its refusal ends the script, not a $(...).
trim() {
	local v=$2
	v="${v#"${v%%[![:space:]]*}"}"
	v="${v%"${v##*[![:space:]]}"}"
	case $v in *[[:cntrl:]]*) fail "input $3: one line, without control characters" ;; esac
	printf -v "$1" '%s' "$v"
}

# yq VALUE: VALUE as a YAML double-quoted scalar.
yq() {
	local s=${1//\\/\\\\}
	printf '"%s"' "${s//\"/\\\"}"
}

prepare() {
	[ "$(uname -s)" = Linux ] || fail "lockcheck runs on Linux runners only (this is $(uname -s))"
	if ! command -v redis-server >/dev/null || ! command -v redis-sentinel >/dev/null || ! command -v redis-cli >/dev/null; then
		command -v apt-get >/dev/null || fail "redis-server is missing and there is no apt-get: install redis-server, redis-sentinel and redis-cli first"
		say "installing redis-server redis-sentinel redis-tools (Debian's packages)"
		sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -qq || exit 255
		sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel redis-tools >/dev/null || exit 255
	fi
	say "$(redis-server --version)"
	local want have setup=true
	want=$(sed -n 's/^go \([0-9][0-9.]*\)[[:space:]]*$/\1/p' "$root/go.mod")
	[ -n "$want" ] || fail "no go line in $root/go.mod"
	# The runner's own Go, asked outside any module and without switching toolchains (a module's go line
	# would make a newer Go download itself here).
	have=$(cd / && GOTOOLCHAIN=local go env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p')
	if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" = "$want" ]; then
		setup=false
	fi
	say "Go: have ${have:-none}, need $want"
	output go-version "$want"
	output setup-go "$setup"
}

# hashof FILE...: one short digest of the files' names and contents (missing files count as empty).
hashof() {
	local f
	for f in "$@"; do
		printf '%s\0' "$f"
		cat "$f" 2>/dev/null
	done | sha256sum | cut -c1-16
}

keys() {
	local gomod gocache lccache src work
	if ! gomod=$(go env GOMODCACHE) || ! gocache=$(go env GOCACHE); then fail "go env failed: is Go set up?"; fi
	lccache=${LOCKCHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockcheck}
	# Nothing depends on the keys for correctness: Go's caches are content-addressed and lockcheck rebuilds
	# a worker whose sources changed. They only decide which saved cache is restored: one of the same
	# dependencies and workers, best one made for the same suite or client.
	mapfile -t files < <(cd "$root" && find go.sum workers -type f \
		-not -path '*/node_modules/*' -not -path '*/target/*' -not -path '*/.venv/*' -not -path '*/__pycache__/*' | LC_ALL=C sort)
	src=$(cd "$root" && hashof "${files[@]}")
	work=$(printf '%s\0%s\0%s\0' "${INPUT_SUITE:-}" "${INPUT_CLIENT:-}" "${INPUT_CLIENT_CMD:-}" | sha256sum | cut -c1-16)
	if [ -n "${INPUT_SUITE:-}" ]; then work=$(hashof "$INPUT_SUITE" | cut -c1-8)$work; fi
	local base="lockcheck-action-${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}"
	output key "$base-$src-$work"
	output restore-key "$base-$src-"
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		printf 'paths<<LOCKCHECK_PATHS\n%s\n%s\n%s\nLOCKCHECK_PATHS\n' "$gomod" "$gocache" "$lccache" >>"$GITHUB_OUTPUT"
	fi
}

build() {
	local dir=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/lockcheck-action
	mkdir -p "$dir" || exit 255
	say "building lockcheck from $root"
	(cd "$root" && go build -o "$dir/lockcheck" ./cmd/lockcheck) || exit 255
	output bin "$dir/lockcheck"
}

# inputs: every INPUT_* read, trimmed and checked into the variables below, before anything runs.
inputs() {
	trim suite "${INPUT_SUITE:-}" suite
	trim merge "${INPUT_MERGE:-}" merge
	trim explore "${INPUT_EXPLORE:-}" explore
	trim lock "${INPUT_LOCK:-}" lock
	trim spec "${INPUT_LOCK_SPEC:-}" lock-spec
	trim client "${INPUT_CLIENT:-}" client
	trim cmd "${INPUT_CLIENT_CMD:-}" client-cmd
	trim nemesis "${INPUT_NEMESIS:-}" nemesis
	trim topology "${INPUT_TOPOLOGY:-}" topology
	trim seeds "${INPUT_SEEDS:-}" seeds
	trim rtime "${INPUT_TIME:-}" time
	trim results "${INPUT_RESULTS:-lockcheck-results}" results
	trim keep "${INPUT_KEEP:-}" keep
	trim shard "${INPUT_SHARD:-}" shard
	trim parallel "${INPUT_PARALLEL:-}" parallel
	trim budget "${INPUT_BUDGET:-}" budget
	trim artifact "${INPUT_ARTIFACT_NAME:-}" artifact-name
	trim server "${INPUT_SERVER:-}" server
	[[ $server =~ ^[A-Za-z0-9._@-]*$ ]] || fail "input server: NAME or NAME@VERSION (lockcheck run --server), e.g. valkey@8.1.8, got \"$server\""
	policy
	[ -n "$results" ] || fail "input results: empty"
	[ -z "$parallel" ] || [[ $parallel =~ ^[1-9][0-9]*$ ]] || fail "input parallel: want a count of at least 1, got \"$parallel\""
	local v line k w
	# budget: a duration as sleep takes it (90s, 20m, 1h30m, or seconds)
	sleep_words=()
	if [[ $budget =~ ^[0-9]+$ ]]; then
		sleep_words=("${budget}s")
	elif [[ -n $budget && $budget =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s)?$ ]]; then
		for w in "${BASH_REMATCH[@]:1}"; do [ -z "$w" ] || sleep_words+=("$w"); done
	elif [ -n "$budget" ]; then
		fail "input budget: want a duration such as 90s, 20m or 1h30m, got \"$budget\""
	fi
	# seeds: a count n (seeds 1..n, as in a suite file) or a list ("7, 42", "[7]")
	seeds_yaml=""
	if [[ $seeds =~ ^[0-9]+$ ]]; then
		seeds_yaml=$seeds
	elif [ -n "$seeds" ]; then
		local s list=() words
		v=${seeds#[}
		IFS=', ' read -ra words <<<"${v%]}"
		for s in "${words[@]}"; do
			[[ $s =~ ^-?[0-9]+$ ]] || fail "input seeds: want a count (3: seeds 1, 2, 3) or a list of integers (\"7, 42\", \"[7]\"), got \"$seeds\""
			list+=("$s")
		done
		[ ${#list[@]} -gt 0 ] || fail "input seeds: an empty list"
		seeds_yaml="[$(IFS=,; printf '%s' "${list[*]// /}")]"
	fi
	# flags: one "flag: value" per line, lockcheck run's flags without their dashes
	flag_lines=() flag_args=()
	while IFS= read -r line || [ -n "$line" ]; do
		trim line "$line" flags
		case $line in '' | '#'*) continue ;; esac
		[[ $line =~ ^([a-z][a-z0-9-]*)[[:space:]]*:[[:space:]]*(.*)$ ]] ||
			fail "input flags: want one \"flag: value\" per line (a lockcheck run flag without its dashes), got \"$line\""
		k=${BASH_REMATCH[1]}
		v=${BASH_REMATCH[2]}
		if [[ $v =~ ^\"(.*)\"$ || $v =~ ^\'(.*)\'$ ]]; then v=${BASH_REMATCH[1]}; fi
		flag_lines+=("$k: $(yq "$v")")
		flag_args+=("--$k=$v") # explore's own flags, as arguments
	done <<<"${INPUT_FLAGS:-}"
	if [ -n "$explore" ]; then
		[[ $explore =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s)?$ ]] || fail "input explore: want explore's budget, a duration such as 10m or 1h30m, got \"$explore\""
		[ -z "$suite$merge" ] || fail "input explore and suite or merge: give one (explore searches the lock that lock, lock-spec, client or client-cmd name)"
		[ -n "$lock$spec$client$cmd" ] || fail "input explore: name the lock to explore: lock, lock-spec, client or client-cmd"
		local n
		for n in nemesis:"$nemesis" seeds:"$seeds" time:"$rtime"; do
			[ "${n#*:}" = "" ] || fail "input ${n%%:*} is for a run made from inputs, not with explore (explore draws its own schedules; its seed goes in flags)"
		done
	elif [ -n "$suite$merge" ]; then
		local n what=suite
		[ -z "$merge" ] || what=merge
		[ -z "$suite" ] || [ -z "$merge" ] || fail "input suite and merge: give one (merge joins the results of jobs that ran a suite)"
		[ -z "$merge" ] || [ -z "$shard" ] || fail "input shard is for a job that runs a suite, not with merge"
		[ -z "$merge" ] || [ -z "$server" ] || fail "input server is for a job that runs a suite, not with merge (each job's runs name their server)"
		for n in lock:"$lock" lock-spec:"$spec" client:"$client" client-cmd:"$cmd" nemesis:"$nemesis" \
			topology:"$topology" seeds:"$seeds" time:"$rtime" flags:"${flag_lines[*]}"; do
			[ "${n#*:}" = "" ] || fail "input ${n%%:*} is for a run made from inputs, not with $what (set it in the suite file)"
		done
	elif [ -z "$lock$spec$client$cmd" ]; then
		fail "give suite, merge, or what to run: lock, lock-spec, client or client-cmd"
	fi
	if [ -z "$artifact" ]; then
		artifact=lockcheck${server:+-$server}
		[ -z "$shard" ] || artifact=$artifact-shard-${shard//\//-of-}
	fi
}

# policy: the input decide needs.
policy() {
	trim fou "${INPUT_FAIL_ON_UNKNOWN:-false}" fail-on-unknown
	case $fou in true | false) ;; *) fail "input fail-on-unknown: want true or false, got \"$fou\"" ;; esac
}

# decide CODE [LOG]: the policy. 0 passes; 1 (a run missed its expected verdict: invalid where valid was
# expected, or no verdict at all) fails, with one error line per missed run in LOG (its first violation); 2 (unknown: the suite was stopped, by the budget, before every
# run had its verdict) fails only with fail-on-unknown; 130 (stopped before any run ended), 254 (bad
# input) and 255 (harness error) fail. Returns the step's exit code: 0, or lockcheck's own.
decide() {
	local code=$1
	case $code in
	0) return 0 ;;
	1)
		local missed=""
		if [ -n "${2:-}" ]; then
			missed=$(missed_of "$2")
			missed_lines "$2" '::error::lockcheck: %s %s'
		fi
		if [ -n "$missed" ]; then
			printf '::error::lockcheck: %s missed the expected verdict: %s\n' "$(runs "$(wc -w <<<"$missed")")" "$missed"
		else
			printf '::error::lockcheck: a run missed its expected verdict, or the suite ran nothing\n'
		fi
		;;
	2)
		if [ "$fou" = false ]; then
			printf '::warning::lockcheck: verdict unknown (stopped before every run was judged); not failing, as fail-on-unknown is false\n'
			return 0
		fi
		printf '::error::lockcheck: verdict unknown (stopped before every run was judged), and fail-on-unknown is true\n'
		;;
	130) printf '::error::lockcheck: stopped before any run had a verdict (a budget shorter than one run?)\n' ;;
	254) printf '::error::lockcheck: bad input (the line above says which)\n' ;;
	*) printf '::error::lockcheck: harness error, exit %s (not a verdict)\n' "$code" ;;
	esac
	return "$code"
}

# The log's lines, as lockcheck suite and merge print them: "ok   ID VERDICT (want ...) 4.2s" for each run
# (FAIL when it missed its expected verdict) and, under it, "  story: ..." (its first violation, in words)
# and, for an invalid run, "  known: `ENTRY`, ..." or "  new: ..." (the catalog entry its finding is, or none).
progress='($1 == "ok" || $1 == "FAIL") && NF >= 3'

# missed_of LOG: the ids of the runs that missed their expected verdict, on one line.
missed_of() {
	[ -f "${1:-}" ] || return 0
	awk "$progress"' && $1 == "FAIL" { printf "%s%s", (n++ ? " " : ""), $2 } END { if (n) print "" }' "$1"
}

# missed_lines LOG FORMAT: a line for each run that missed its expected verdict, FORMAT (printf's) given its
# id and what it got, wanted and its story: "got invalid (want valid): STORY (known: ...)". A workflow command's FORMAT
# starts with "::", and then a % in the message is escaped.
missed_lines() {
	awk -v fmt="$2" 'function flush() { if (pending) { if (fmt ~ /^::/) gsub(/%/, "%25", line); printf fmt "\n", id, line }; pending = 0 }
		'"$progress"' { flush(); if ($1 == "FAIL") { want = $0; sub(/.*\(want /, "", want); sub(/\).*/, "", want)
			id = $2; line = sprintf("got %s (want %s)", $3, want); pending = 1 }; next }
		/^  story: / && pending { sub(/^  story: /, ""); line = line ": " $0 }
		/^  (known|new): / && pending { sub(/^  /, ""); line = line " (" $0 ")" }
		END { flush() }' "$1"
}

# runs N: "N run" or "N runs".
runs() { if [ "$1" = 1 ]; then echo "1 run"; else echo "$1 runs"; fi; }

# entry_name: the generated entry's name, after what it tests: letters, digits, '.', '_' and '-'.
entry_name() {
	local n=worker
	if [ -n "$client" ]; then
		n=$client
	elif [ -n "$lock" ]; then
		n=$lock
	elif [ -n "$spec" ]; then
		n=$(basename "$spec")
		n=${n%.*}
	fi
	n=$(printf '%s' "$n" | LC_ALL=C tr -c 'A-Za-z0-9._-' '-')
	case $n in [A-Za-z0-9]*) printf '%s' "$n" ;; *) printf 'run-%s' "$n" ;; esac
}

# write_suite FILE: the suite of one entry that the run inputs describe. Its expected verdict is valid,
# and unknown too unless fail-on-unknown, so that the JUnit file and the suite page agree with the job.
write_suite() {
	local f
	{
		printf '# Made by the lockcheck action from its inputs; "lockcheck suite %s" runs it again.\n' "$1"
		printf 'name: action\nentries:\n  - name: %s\n' "$(entry_name)"
		[ -z "$lock" ] || printf '    lock: %s\n' "$(yq "$lock")"
		[ -z "$client" ] || printf '    client: %s\n' "$(yq "$client")"
		[ -z "$spec" ] || printf '    lock-spec: %s\n' "$(yq "$spec")"
		[ -z "$topology" ] || printf '    topologies: [%s]\n' "$(yq "$topology")"
		[ -z "$nemesis" ] || printf '    nemeses: [%s]\n' "$(yq "$nemesis")"
		[ -z "$seeds_yaml" ] || printf '    seeds: %s\n' "$seeds_yaml"
		[ -z "$rtime" ] || printf '    time: %s\n' "$(yq "$rtime")"
		printf '    flags:\n'
		[ -z "$cmd" ] || printf '      client-cmd: %s\n' "$(yq "$cmd")"
		for f in "${flag_lines[@]}"; do printf '      %s\n' "$f"; done
		if [ "$fou" = true ]; then printf '    expect: valid\n'; else printf '    expect: [valid, unknown]\n'; fi
	} >"$1" || exit 255
}

# expectations_of LOG CODE: whether the runs met their expected verdicts, which decides the job (the verdicts
# do not: a control expected invalid is): met (every run did), missed (one did not, or nothing ran), unknown
# (stopped before every run was judged, none missed so far) or error (no verdict: bad input, harness error).
expectations_of() {
	case $2 in
	0) echo met ;;
	1) echo missed ;;
	2) echo unknown ;;
	*) if [ -n "$(missed_of "$1")" ]; then echo missed; else echo error; fi ;;
	esac
}

# counts_of LOG: how many runs got each verdict, as JSON (fromJSON in a workflow reads it).
counts_of() {
	awk "$progress"' { n[$3]++ } END { printf "{\"valid\":%d,\"invalid\":%d,\"unknown\":%d,\"error\":%d}\n", n["valid"], n["invalid"], n["unknown"], n["error"] }' "$1"
}

# verdict_of LOG CODE: from the suite's progress lines ("ok   ID VERDICT (want ...) 4.2s"): invalid if any
# run was; else error (a run without a verdict, or lockcheck failed); else unknown (a run was, or the
# suite was stopped); else valid.
verdict_of() {
	local v
	v=" $(awk "$progress"' { print $3 }' "$1" | sort -u | tr '\n' ' ')"
	if [[ $v == *" invalid "* ]]; then
		echo invalid
	elif [[ $v == *" error "* || ! $2 =~ ^[012]$ ]]; then
		echo error
	elif [[ $v == *" unknown "* || ($v == *" valid "* && $2 == 2) ]]; then
		echo unknown
	elif [[ $v == *" valid "* ]]; then
		echo valid
	else
		echo error # no run ended
	fi
}

# summary LOG EXPECTATIONS VERDICT CODE: the job's summary page: whether the runs met their expectations,
# the first violation of each run that missed, then every run as a table with its story.
summary() {
	[ -n "${GITHUB_STEP_SUMMARY:-}" ] || return 0
	{
		printf '### lockcheck: expectations %s; worst verdict %s (exit %s)\n\n' "$2" "$3" "$4"
		if [ -n "$server" ]; then
			printf 'Server: `%s` (each run'"'"'s page names the server and version it ran)\n\n' "$server"
		elif [ -z "$merge" ]; then
			printf 'Server: `redis` (the runner'"'"'s redis-server)\n\n'
		fi
		missed_lines "$1" '- **✗ `%s`** %s'
		printf '\n| | run | verdict | expected | seconds |\n|---|---|---|---|---|\n'
		awk "$progress"' {
			want = $0; sub(/.*\(want /, "", want); sub(/\).*/, "", want)
			printf "| %s | `%s` | %s | %s | %s |\n", ($1 == "ok" ? "✓" : "✗"), $2, $3, want, $NF
		}' "$1"
		printf '\n'
		# The story of each run that met its expectation (those that missed are above).
		awk "$progress"' { mark = $1; id = $2 }
			/^  story: / && mark == "ok" { sub(/^  story: /, ""); printf "- ✓ `%s`: %s\n", id, $0 }
			/^  (known|new): / && mark == "ok" { sub(/^  /, ""); printf "  - %s\n", $0 }' "$1"
		printf '\n'
		grep -E '^(suite |missed: )' "$1" | sed 's/^/    /'
		if [ -n "$explore" ]; then
			printf '\nThe explore page (index.html), explore.json, coverage.json and each finding'"'"'s schedule and report are in the artifact "%s".\n' "$artifact"
		else
			printf '\nThe suite page (index.html), the pages of the runs kept and junit.xml are in the artifact "%s".\n' "$artifact"
		fi
	} >>"$GITHUB_STEP_SUMMARY"
}

# no_links DIR: refuses DIR when it, a directory on its way in the workspace, or anything in it is a
# symbolic link: a checkout can carry one where the results go (lockcheck-results/runs, its log, junit.xml),
# and nothing is written, removed or uploaded through a link lockcheck did not make. The links lockcheck
# makes (a run's latest, naming a directory beside it) are left alone.
no_links() {
	local cur="" part parts link
	IFS=/ read -ra parts <<<"$1"
	[ "${1#/}" = "$1" ] || parts=("${parts[-1]}") # an absolute path: the workspace holds its last part at most
	if [ "${1#/}" != "$1" ]; then cur=$(dirname "$1") && cur=${cur%/}/; fi
	for part in "${parts[@]}"; do
		[ -n "$part" ] || continue
		cur=$cur$part
		[ ! -L "$cur" ] || fail "input results: $cur is a symbolic link (a checkout can carry one): lockcheck writes results only into directories of their own; remove it"
		cur=$cur/
	done
	[ -d "$1" ] || return 0
	link=$(find "$1" -type l ! \( -name latest -lname '[!./]*' ! -lname '*/*' \) -print -quit)
	[ -z "$link" ] || fail "input results: $link is a symbolic link (a checkout can carry one): lockcheck writes results only into directories of their own; remove it"
}

run() {
	local bin=${LOCKCHECK_BIN:-}
	if [ -z "$bin" ]; then bin=$(command -v lockcheck) || fail "no lockcheck: run the build step first or set LOCKCHECK_BIN"; fi
	[ -x "$bin" ] || fail "LOCKCHECK_BIN $bin is not an executable"
	no_links "$results"
	mkdir -p "$results" || fail "input results: cannot make $results"
	local log=$results/lockcheck.log
	: >"$log" || fail "input results: cannot write $log"
	local file=$suite
	if [ -z "$suite$merge$explore" ]; then
		if [ -n "$spec" ] && [ "${spec#/}" = "$spec" ]; then spec=$PWD/$spec; fi # the suite file is elsewhere
		file=$results/action-suite.yaml
		write_suite "$file"
		: "${keep:=all}"
	fi
	: "${keep:=failed}"
	export LOCKCHECK_WORKERS=${LOCKCHECK_WORKERS:-$root/workers}
	output results "$results"
	output artifact-name "$artifact"
	local args=(suite "$file" --results "$results" --junit "$results/junit.xml" --keep "$keep")
	[ -z "$shard" ] || args+=(--shard "$shard")
	[ -z "$server" ] || args+=(--server "$server")
	[ -z "$parallel" ] || args+=(--parallel "$parallel")
	# merge: the jobs' results under the directory given (each artifact a directory of its own) into one.
	[ -z "$merge" ] || args=(merge --out "$results" --junit "$results/junit.xml" "$merge")
	# explore: the search, its findings printed as a suite's runs (a new one FAIL, a known one ok).
	if [ -n "$explore" ]; then
		if [ -n "$spec" ] && [ "${spec#/}" = "$spec" ]; then spec=$PWD/$spec; fi
		args=(explore --budget "$explore" --results "$results")
		local f
		for f in lock:"$lock" lock-spec:"$spec" client:"$client" client-cmd:"$cmd" topology:"$topology" \
			server:"$server" shard:"$shard" parallel:"$parallel"; do
			[ -z "${f#*:}" ] || args+=("--${f%%:*}=${f#*:}")
		done
		args+=("${flag_args[@]}")
	fi
	say "lockcheck ${args[*]}"

	# lockcheck runs in a session of its own, so that a signal to this script's process group does not
	# reach it twice (it takes a second signal as "stop now"), and dies with this script (kill -9 too). Its
	# output goes to the log, which tail shows as it grows. tail and the budget's sleep die with this script
	# too. The budget is a sleep: when it ends first,
	# lockcheck gets one SIGINT (it stops the runs in flight, keeps what ended, exits 2); a cancel (INT,
	# TERM, HUP to this script) is passed on each time it comes. SIGUSR1 to this script ends the budget now.
	local pid tailpid spid="" stop="" code="" r ended
	setsid -w setpriv --pdeathsig TERM -- "$bin" "${args[@]}" </dev/null >"$log" 2>&1 &
	pid=$!
	setpriv --pdeathsig KILL -- tail -n +1 -f --pid="$pid" "$log" &
	tailpid=$!
	if [ ${#sleep_words[@]} -gt 0 ]; then
		setpriv --pdeathsig KILL -- sleep "${sleep_words[@]}" &
		spid=$!
	fi
	out_of_budget() {
		if [ -z "$stop" ]; then
			stop=budget
			say "the budget${budget:+ ($budget)} ran out: stopping lockcheck (the runs in flight get no verdict)"
			kill -INT "$pid" 2>/dev/null
		fi
	}
	trap 'stop=cancel; say "cancelled: stopping lockcheck"; kill -INT "$pid" 2>/dev/null' INT TERM HUP
	trap out_of_budget USR1 # the budget's end, told by a signal: what the tests use instead of a clock
	while :; do
		ended=""
		wait -n -p ended "$pid" ${spid:+"$spid"}
		r=$?
		if [ "${ended:-}" = "$pid" ]; then
			code=$r
			break
		elif [ -n "$spid" ] && [ "${ended:-}" = "$spid" ]; then
			spid=""
			out_of_budget
		elif [ -z "${ended:-}" ] && [ "$r" -le 128 ]; then # no child left to wait for: cannot happen
			code=255
			break
		fi # else a trap interrupted the wait
	done
	trap - INT TERM HUP USR1
	if [ -n "$spid" ]; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	wait "$tailpid" 2>/dev/null

	local verdict expectations
	verdict=$(verdict_of "$log" "$code")
	expectations=$(expectations_of "$log" "$code")
	output exit-code "$code"
	output expectations "$expectations"
	output verdict "$verdict"
	output counts "$(counts_of "$log")"
	output missed "$(missed_of "$log")"
	[ ! -f "$results/junit.xml" ] || output junit "$results/junit.xml"
	summary "$log" "$expectations" "$verdict" "$code"
	if [ "$stop" = cancel ]; then
		printf '::error::lockcheck: cancelled\n'
		exit 130
	fi
	decide "$code" "$log"
	exit $?
}

[ "${BASH_VERSINFO[0]}" -gt 5 ] || { [ "${BASH_VERSINFO[0]}" = 5 ] && [ "${BASH_VERSINFO[1]}" -ge 1 ]; } ||
	fail "bash 5.1 or newer is needed (wait -n -p); this is $BASH_VERSION"
case ${1:-} in
prepare | keys | build) "$1" ;;
run)
	inputs
	run
	;;
decide)
	[[ ${2:-} =~ ^[0-9]+$ ]] || fail "decide: want an exit code"
	policy
	decide "$2"
	;;
*) fail "usage: run.sh prepare|keys|build|run|decide CODE" ;;
esac
