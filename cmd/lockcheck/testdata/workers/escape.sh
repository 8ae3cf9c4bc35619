#!/bin/sh
# A worker whose child leaves its process group and session (setsid), ignores SIGTERM and keeps the
# worker's stdout open; $MARK tags it. The worker itself grants everything (grant.sh) and exits at the end
# of its stdin.
setsid sh -c 'trap "" TERM; exec sleep "$0"' "${MARK:-600.127}" &
exec "$(dirname "$0")/grant.sh"
