#!/bin/sh
# A worker that completes the handshake, then reads requests and never answers.
LIB=silent . "$(dirname "$0")/handshake.sh"
while read -r line; do :; done
