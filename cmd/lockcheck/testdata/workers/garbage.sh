#!/bin/sh
# A worker that completes the handshake, then prints a line that is not JSON.
LIB=garbage . "$(dirname "$0")/handshake.sh"
read -r line
echo "hello, I am not JSON"
sleep 600.123
