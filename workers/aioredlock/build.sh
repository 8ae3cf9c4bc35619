#!/bin/sh
# build.sh VERSION OUTDIR: installs aioredlock VERSION ("" or "default": DEFAULT_VERSION) from PyPI, with aioredis
# below 2 (the only aioredis it speaks), into a virtualenv in OUTDIR and leaves OUTDIR/run, which starts the worker
# (docs/protocol.md); the steps are shared with the other Python workers (../lcp-python/build-venv.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../lcp-python/build-venv.sh" aioredlock aioredlock aioredlock "$here" "--with=aioredis<2" "$@"
