#!/usr/bin/env bash
# Issue 37's bar, second half: `lockcheck explore` on each broken twin of examples/twins/twins.txt (the
# lock's flags + the twin's own; twins of a family explore does not generate, such as the latch's,
# are skipped with a line saying so) for each seed, then on the unbroken locks (-u), J explores side by
# side at nice 10. A twin's explore stops at its first new finding (--max-findings 1) and settles it
# (--confirm 5); an unbroken lock's runs the whole budget. One row per explore, from its explore.json:
# found or not, time to the first finding, runs, distinct transitions covered, the finding's k of n and
# known or new; for a twin's new finding, its schedule run on the base (seeds 1-3): valid there means the
# finding is the twin's flaw.
# Usage: scripts/explore-bench.sh [-b TWIN_BUDGET] [-u UNBROKEN_BUDGET] [-s "SEEDS"] [-j J] [-S SETTLE] [twin or unbroken lock...]
#   defaults: -b 10m -u 30m -s "1 2 3" -j 2 -S 3m (the issue's figures); -u 0 skips the unbroken locks,
#   -b 0 the twins. Runs go under results/explore-bench/; LOCKCHECK names the binary (default bin/lockcheck).
set -u
budget=10m ubudget=30m seeds="1 2 3" jobs=2 settle=3m
while getopts b:u:s:j:S: o; do
  case $o in b) budget=$OPTARG ;; u) ubudget=$OPTARG ;; s) seeds=$OPTARG ;; j) jobs=$OPTARG ;; S) settle=$OPTARG ;; *) exit 254 ;; esac
done
shift $((OPTIND - 1))
bin=${LOCKCHECK:-bin/lockcheck}
list=examples/twins/twins.txt
out=results/explore-bench
[ -x "$bin" ] || { echo "explore-bench: no $bin (make build)" >&2; exit 254; }
command -v jq >/dev/null || { echo "explore-bench: needs jq" >&2; exit 254; }
mkdir -p "$out"

# The unbroken locks: the Go emulation's locks explore generates (not multi or latch: it refuses their
# families), an example spec, each shipped worker at its latest release (named where the worker's
# DEFAULT_VERSION is older; Spring's 7.2.0 needs lettuce-core 7.8.0, which this machine's Maven cannot
# fetch, so its 7.1.3); an unbroken lock named after the options runs alone (-b 0 -u 30m fair).
unbroken='reentrant|--lock reentrant
rwlock|--lock rwlock
fair|--lock fair
semaphore|--lock semaphore
expirable-semaphore|--lock expirable-semaphore
fenced|--lock fenced
redlock-spec|--lock redlock-spec
redsync|--client redsync
redlock|--lock redlock
rwlock-yaml|--lock-spec examples/locks/rwlock.yaml
redisson|--client redisson
redis-py|--client redis-py@8.2.0
node-redlock|--client node-redlock
redislock|--client redislock
pottery|--client pottery
spring-integration|--client spring-integration
python-redis-lock|--client python-redis-lock
aioredlock|--client aioredlock
redis-semaphore|--client redis-semaphore'
# names given: the twins and unbroken locks named, each known; none: every one
names=$(grep -v '^#' "$list" | cut -d'|' -f1 | tr -d ' ') unames=$(printf '%s\n' "$unbroken" | cut -d'|' -f1)
if [ $# -gt 0 ]; then
  tw="" un=""
  for n in "$@"; do
    if grep -q "^$n |" "$list"; then tw="$tw $n"
    elif printf '%s\n' "$unames" | grep -qx "$n"; then un="$un $n"
    else echo "explore-bench: no twin or unbroken lock $n" >&2; exit 254
    fi
  done
  names=$tw unames=$un
fi

# one explore: $1 name, $2 seed, $3 budget, $4 the lock's flags, $5 extra flags (--max-findings 1 for twins),
# $6 for a twin the lock's flags with the base's own flag instead of the twin's; row in $dir/row
one() {
  name=$1 seed=$2 b=$3 flags=$4 extra=$5 base=${6:-}
  dir=$out/$name/seed-$seed
  rm -rf "$dir"; mkdir -p "$dir"
  # shellcheck disable=SC2086 # the flags are words
  nice -n 10 "$bin" explore $flags $extra --seed "$seed" --budget "$b" --settle-budget "$settle" --confirm 5 \
    --results "$dir/explore" >"$dir/stdout" 2>"$dir/stderr"
  code=$?
  j=$dir/explore/explore.json
  if [ ! -f "$j" ]; then
    printf '| `%s` | %s | error (exit %s: %s) | | | | | | |\n' "$name" "$seed" "$code" \
      "$(tail -1 "$dir/stderr")" >"$dir/row"
    return
  fi
  # Is the first new finding the twin's own flaw? Its schedule, with the settings it ran with, on the base
  # (the twin's one change undone), seeds 1-3: a flaw of the twin leaves the base valid.
  basecol=""
  f=$(jq -r '[.findings[]? | select((.settled.known // .known_at_find // "") == "")][0] // empty | "\(.schedule) \(.args // [] | join(" "))"' "$j")
  if [ -n "$base" ] && [ -n "$f" ]; then
    sched=${f%% *} args=${f#* }
    [ "$args" = "$f" ] && args=""
    valid=0
    for bs in 1 2 3; do
      # shellcheck disable=SC2086
      nice -n 10 "$bin" run $base $args --schedule "$dir/explore/$sched" --seed "$bs" --results "$dir/base" >>"$dir/base.out" 2>&1
      [ $? -eq 0 ] && valid=$((valid + 1))
    done
    basecol="valid $valid of 3"
  fi
  # new findings first: found or not, seconds to the first finding, runs, distinct transitions, k of n, known
  # or new, the base on its schedule
  jq -r --arg n "$name" --arg s "$seed" --arg c "$code" --arg b "$basecol" '
    ((.findings // []) | map(select((.settled.known // .known_at_find // "") == "")) +
      map(select((.settled.known // .known_at_find // "") != ""))) as $f |
    "| `\($n)` | \($s) | " +
    (if ($f | length) == 0 then "none" else ($f[0].signature | split(", at ")[0]) end) + " | " +
    (if ($f | length) == 0 then "" else "\($f[0].found_after_s | floor) s" end) +
    " | \(.runs) | \(.coverage) | " +
    (if ($f | length) == 0 then "" elif $f[0].settled then "\($f[0].settled.caught) of \($f[0].settled.of)" + (if ($f[0].settled.schedule_of // 0) > 0 then " (schedule \($f[0].settled.schedule_caught // 0) of \($f[0].settled.schedule_of))" else "" end) else "unsettled" end) +
    " | " + ($f | map(if (.settled.known // .known_at_find // "") != "" then "known: " + (.settled.known // .known_at_find) else "new" end) | join(", ")) +
    " | \($b) | exit \($c) |"' "$j" >"$dir/row"
}

# J at a time: a new explore starts as soon as one ends
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  one "$@" &
}
if [ "$budget" != 0 ]; then
  for s in $seeds; do
    for n in $names; do
      line=$(grep "^$n |" "$list")
      field() { printf '%s\n' "$line" | cut -d'|' -f"$1" | sed 's/^ *//; s/ *$//'; }
      flags="$(field 2) $(field 3)"
      # a family explore does not generate (the latch): ask it, one quick refusal
      # shellcheck disable=SC2086
      if "$bin" explore $flags --budget 1ms --results "$out/.probe-$n" 2>&1 | grep -q 'explore generates schedules of'; then
        mkdir -p "$out/$n/seed-$s"
        printf '| `%s` | %s | not explorable (explore refuses its family) | | | | | | |\n' "$n" "$s" >"$out/$n/seed-$s/row"
        continue
      fi
      spawn "$n" "$s" "$budget" "$flags" "--max-findings 1" "$(field 2) $(field 4)"
    done
  done
fi
if [ "$ubudget" != 0 ]; then
  printf '%s\n' "$unbroken" | while IFS='|' read -r n flags; do
    printf '%s\n' $unames | grep -qx "$n" && echo "$n|$flags"
  done >"$out/.unbroken"
  while IFS='|' read -r n flags; do
    for s in $(echo "$seeds" | cut -d' ' -f1); do spawn "$n" "$s" "$ubudget" "$flags" ""; done
  done <"$out/.unbroken"
fi
wait
rm -rf "$out"/.probe-* "$out/.unbroken"
echo "| lock | seed | first new finding (else first) | time to it | runs | transitions | k of n | known or new | base on its schedule | exit |"
echo "|---|---|---|---|---|---|---|---|---|---|"
cat "$out"/*/seed-*/row 2>/dev/null
