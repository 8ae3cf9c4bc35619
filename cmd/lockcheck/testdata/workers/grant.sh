#!/bin/sh
# A worker that grants and sets everything at once (grantloop.sh).
LIB=grant . "$(dirname "$0")/handshake.sh"
. "$(dirname "$0")/grantloop.sh"
