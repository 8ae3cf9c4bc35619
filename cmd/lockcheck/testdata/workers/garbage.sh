#!/bin/sh
# A worker that completes the handshake, then prints a line that is not JSON.
. "$(dirname "$0")/handshake.sh" garbage
read -r line
echo "hello, I am not JSON"
sleep 600.123
