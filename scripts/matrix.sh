#!/bin/sh
# Every topology x fault pair that makes sense, as a new user would try them:
#   lockcheck run --lock reentrant --topology T --nemesis F --time 20s
# One line each: exit code, verdict, faults started/stopped, final heal. Usage: scripts/matrix.sh [lockcheck]
# [extra flags...]; results go under results/matrix. Takes about 20 minutes.
bin=${1:-bin/lockcheck}
[ $# -gt 0 ] && shift
common="single redlock"
replicated="sentinel cluster"
faults="partition partition-node partition-halves partition-ring latency drop-reply kill pause clock clock-strobe client-pause client-clock"
failovers="failover failover-command lagging-failover partition-nodes"
printf '%-9s %-17s %4s %-8s %6s %6s %s\n' topology fault exit verdict starts stops heal
for topo in $common $replicated; do
  list=$faults
  case " $replicated " in *" $topo "*) list="$faults $failovers";; esac
  for f in $list; do
    out=$("$bin" run --lock reentrant --topology "$topo" --nemesis "$f" --time 20s --nemesis-interval 2s \
      --nemesis-duration 6s --results results/matrix "$@" 2>&1)
    code=$?
    dir=$(printf '%s\n' "$out" | sed -n 's/.*(details: \(.*\))/\1/p' | tail -1)
    verdict=$(printf '%s\n' "$out" | sed -n 's/^VERDICT: \([A-Z]*\).*/\1/p' | tail -1)
    starts=$(grep -c "\"f\":\"$f\",\"phase\":\"start\"" "$dir/history.jsonl" 2>/dev/null)
    stops=$(grep -c "\"f\":\"$f\",\"phase\":\"stop\"" "$dir/history.jsonl" 2>/dev/null)
    heal=$(grep -c '"phase":"final"' "$dir/history.jsonl" 2>/dev/null)
    printf '%-9s %-17s %4s %-8s %6s %6s %s\n' "$topo" "$f" "$code" "${verdict:--}" "${starts:-0}" "${stops:-0}" "${heal:-0}"
  done
done
