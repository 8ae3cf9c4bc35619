#!/bin/sh
# A build whose registry answers that it has no such version: exit 4, one line on stderr.
echo "resolving version $1..."
echo "build.sh: the registry says: no version $1" >&2
exit 4
