#!/bin/sh
# build.sh VERSION OUTDIR: installs python-redis-lock VERSION ("" or "default": DEFAULT_VERSION) from PyPI into a
# virtualenv in OUTDIR and leaves OUTDIR/run, which starts the worker (docs/protocol.md); the steps are shared
# with the other Python workers (../lcp-python/build-venv.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../lcp-python/build-venv.sh" python-redis-lock python-redis-lock redis_lock "$here" "$@"
