#!/bin/sh
# Issue 12's measure of "porcupine decides": the lagging failover run
#   lockcheck run --lock reentrant --topology sentinel --nemesis lagging-failover --time 90s --seed S
# for seeds 1-10 (or those given after the binary). One line each: porcupine's verdict and check time, the
# commands and unknown outcomes it judged. Exits 1 if any seed is left unknown or slower than 10 s.
# Usage: scripts/lagging-decides.sh [lockcheck] [seed...]; runs go under results/lagging. About 17 minutes.
bin=${1:-bin/lockcheck}
[ $# -gt 0 ] && shift
seeds=${*:-1 2 3 4 5 6 7 8 9 10}
fail=0
printf '%4s %4s %-8s %8s %8s %8s\n' seed exit verdict check_ms commands unknown
for s in $seeds; do
  out=$("$bin" run --lock reentrant --topology sentinel --nemesis lagging-failover --time 90s --seed "$s" \
    --results results/lagging 2>&1)
  code=$?
  dir=$(printf '%s\n' "$out" | sed -n 's/.*(details: \(.*\))/\1/p' | tail -1)
  line=$(jq -r '.checkers[] | select(.checker == "porcupine") |
    "\(.valid) \(.details.check_ms) \(.details.operations) \(.details.unknown_operations)"' "$dir/results.json" 2>/dev/null)
  set -- $line
  verdict=$1
  case "$verdict" in true) verdict=valid ;; false) verdict=invalid ;; *) verdict=unknown fail=1 ;; esac
  [ "${2:-99999}" -gt 10000 ] && fail=1
  printf '%4s %4s %-8s %8s %8s %8s\n' "$s" "$code" "$verdict" "${2:--}" "${3:--}" "${4:--}"
done
exit $fail
