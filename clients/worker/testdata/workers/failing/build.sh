#!/bin/sh
# A build that fails as a registry without the version would.
echo "resolving version $1..."
echo "error: version $1 not found in the registry" >&2
exit 1
