#!/bin/sh
# A worker that grants every acquire and release at once, and logs its wall clock (date, through libc) on
# stderr for each request: the client-clock fault must show there.
LIB=clock . "$(dirname "$0")/handshake.sh"
while read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
	type=$(printf '%s' "$line" | sed -n 's/.*"type":"\([a-z_]*\)".*/\1/p')
	echo "clock $(date +%s)" >&2
	printf '{"type":"%s_ok","in_reply_to":%s,"granted":true}\n' "$type" "$id"
done
