#!/bin/sh
# A worker that completes the handshake, then floods stdout with one endless line (no newline).
LIB=flood . "$(dirname "$0")/handshake.sh"
read -r line
exec cat /dev/zero
