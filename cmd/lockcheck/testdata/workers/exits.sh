#!/bin/sh
# A worker that completes the handshake, then exits on its first request.
LIB=exits . "$(dirname "$0")/handshake.sh"
read -r line
echo "exiting on: $line" >&2
exit 3
