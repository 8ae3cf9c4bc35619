#!/bin/sh
# build.sh VERSION OUTDIR: builds the lying-permits control worker (one version: this tree's) into OUTDIR/run.
set -eu
out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
cd "$root"
go build -o "$out/run" ./workers/lying-permits
