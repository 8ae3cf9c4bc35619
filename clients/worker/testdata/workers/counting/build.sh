#!/bin/sh
# A build that counts its runs (beside the cache) and takes a moment, so parallel first uses overlap.
set -eu
echo "$1" >> "$2/../builds.count"
sleep 1
printf '#!/bin/sh\necho built %s\n' "$1" > "$2/run"
chmod +x "$2/run"
