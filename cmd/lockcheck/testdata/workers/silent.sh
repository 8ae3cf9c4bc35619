#!/bin/sh
# A worker that completes the handshake, then reads requests and never answers.
. "$(dirname "$0")/handshake.sh" silent
while read -r line; do :; done
