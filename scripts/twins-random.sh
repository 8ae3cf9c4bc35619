#!/bin/sh
# Issue 37's bar, first half: what today's random workload finds of the broken twins (examples/twins).
# For each twin of examples/twins/twins.txt (or those named), `lockcheck run` with the twin's flags and the
# random workload's (lease ranges, waits, the fault the bug needs), seed 1, 2, ... until the budget is spent
# (the last run may end past it), J twins side by side, each run at nice 10. One line per twin: runs, time,
# verdicts, the time to the first invalid run, the distinct transitions of the lock's model all runs covered
# together (as explore counts its map's), and the distinct failures (the set of checkers each invalid run
# failed, with its count).
# Usage: scripts/twins-random.sh [-b SECONDS] [-j J] [-t RUN_TIME] [twin...]   (default 600 s, 2, 30s)
# Runs go under results/twins-random/<twin>/; LOCKCHECK names the binary (default bin/lockcheck).
set -u
budget=600 jobs=2 runtime=30s
while getopts b:j:t: o; do
  case $o in b) budget=$OPTARG ;; j) jobs=$OPTARG ;; t) runtime=$OPTARG ;; *) exit 254 ;; esac
done
shift $((OPTIND - 1))
bin=${LOCKCHECK:-bin/lockcheck}
list=examples/twins/twins.txt
out=results/twins-random
[ -x "$bin" ] || { echo "twins-random: no $bin (make build)" >&2; exit 254; }
names=${*:-$(grep -v '^#' "$list" | cut -d'|' -f1 | tr -d ' ')}
for n in $names; do
  grep -q "^$n |" "$list" || { echo "twins-random: no twin $n in $list" >&2; exit 254; }
done
mkdir -p "$out"

# one twin: loop runs until the budget is spent; writes $out/<twin>/row
one() {
  n=$1
  line=$(grep "^$n |" "$list")
  field() { printf '%s\n' "$line" | cut -d'|' -f"$1" | sed 's/^ *//; s/ *$//'; }
  flags="$(field 2) $(field 3) $(field 5)"
  dir=$out/$n
  rm -rf "$dir"; mkdir -p "$dir"
  start=$(date +%s) seed=0 valid=0 invalid=0 unknown=0 other=0 first=""
  : >"$dir/failures"; : >"$dir/transitions"
  while [ $(( $(date +%s) - start )) -lt "$budget" ]; do
    seed=$((seed + 1))
    # shellcheck disable=SC2086 # the flags are words
    nice -n 10 "$bin" run $flags --time "$runtime" --seed "$seed" --results "$dir/runs" >"$dir/run-$seed.log" 2>&1
    code=$?
    res=$(sed -n 's/.*(details: \(.*\))/\1/p' "$dir/run-$seed.log" | tail -1)/results.json
    # each transition once, its count left out: the runs' union is what they covered
    jq -c '.model_coverage.transitions[]? | del(.count)' "$res" >>"$dir/transitions" 2>/dev/null
    case $code in
      0) valid=$((valid + 1)) ;;
      1) invalid=$((invalid + 1))
         [ -n "$first" ] || first="$(( $(date +%s) - start ))s"
         jq -r '[.checkers[] | select(.valid == false) | .checker] | join("+")' "$res" >>"$dir/failures" 2>/dev/null
         mv "$(dirname "$res")" "$dir/invalid-$seed" 2>/dev/null ;; # kept to read
      2) unknown=$((unknown + 1)) ;;
      *) other=$((other + 1)); echo "twins-random: $n seed $seed: exit $code (see $dir/run-$seed.log)" >&2 ;;
    esac
    rm -rf "$dir/runs" # keep the logs; a run directory per run would fill the disk
  done
  took=$(( $(date +%s) - start ))
  fails=$(sort "$dir/failures" | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
  printf '| `%s` | `%s` | %s | %ss | %s valid, %s invalid, %s unknown%s | %s | %s | %s |\n' "$n" "$flags" "$seed" "$took" \
    "$valid" "$invalid" "$unknown" "$([ $other -gt 0 ] && echo ", $other errors")" "$first" \
    "$(sort -u "$dir/transitions" | wc -l)" "${fails:-none}" >"$dir/row"
}

running=0
for n in $names; do
  one "$n" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait; running=0; fi
done
wait
echo "| twin | flags (\`lockcheck run\`, --time $runtime --seed 1, 2, ...) | runs | time | verdicts | first invalid | transitions | distinct failures |"
echo "|---|---|---|---|---|---|---|---|"
found=0
for n in $names; do
  cat "$out/$n/row"
  grep -q . "$out/$n/failures" && found=1
done
exit $found
