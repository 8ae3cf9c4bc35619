#!/bin/sh
# A worker that completes the handshake, then exits on its first request.
. "$(dirname "$0")/handshake.sh" exits
read -r line
echo "exiting on: $line" >&2
exit 3
