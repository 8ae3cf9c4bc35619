#!/bin/sh
# A worker that sends events without being asked: $EARLY events right after its init_ok (before lockcheck's
# meta record), and with FLOOD=NAME a child that sends NAME events as fast as it can ($COUNT of them, or
# for ever), while the worker grants everything (grantloop.sh). The child writes whole lines, at most
# PIPE_BUF bytes at a time, so the pipe never splits them among the worker's replies. With NOREAD=1 the
# worker never reads its stdin again: it waits for the flood (a hung library call that logs without end).
LIB=events . "$(dirname "$0")/handshake.sh"
i=0
while [ "$i" -lt "${EARLY:-1}" ]; do
	printf '{"type":"event","event":"renewed","thread":1,"key":"lock-0","text":"early %s"}\n' "$i"
	i=$((i + 1))
done
if [ -n "$FLOOD" ]; then
	python3 -c '
import os, sys
line = ("{\"type\":\"event\",\"event\":\"%s\",\"thread\":1,\"key\":\"lock-0\",\"text\":\"flood\"}\n" % sys.argv[1]).encode()
per = 4096 // len(line)
left = int(sys.argv[2]) or -1
while left != 0:
    n = per if left < 0 else min(per, left)
    os.write(1, line * n)
    left = left - n if left > 0 else left
' "$FLOOD" "${COUNT:-0}" &
fi
if [ -n "$NOREAD" ]; then
	wait
	exit 0
fi
. "$(dirname "$0")/grantloop.sh"
[ -z "$COUNT" ] || wait # a counted flood is sent whole before the worker exits
