#!/bin/sh
# A worker that completes the handshake (library $LIB), then answers every request with $ANSWER, where %s
# is the request's msg_id.
. "$(dirname "$0")/handshake.sh"
while read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
	printf "$ANSWER\n" "$id"
done
