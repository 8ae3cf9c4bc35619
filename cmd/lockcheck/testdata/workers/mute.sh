#!/bin/sh
# A worker that never answers init (its runtime "starts" for ever); $MARK tags its process.
exec sleep "${MARK:-600.126}"
