#!/bin/sh
# The Go library workers share one smoke test (redsync/smoke.sh says what it checks).
exec "$(dirname "$0")/../redsync/smoke.sh" "$@"
