#!/bin/sh
# Make sure a Docker engine answers, starting one where this machine allows it (root, Debian): docker.io
# from Debian's packages, then dockerd with vfs storage, no iptables and no bridge, as lockcheck's
# containers use host networking. Prints one plain line either way; exits 1 when there is no engine.
if docker info >/dev/null 2>&1; then echo "docker engine: up"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "docker engine: none, and not root to start one: docker-backend tests will be skipped"; exit 1; fi
if ! command -v dockerd >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null 2>&1 || \
    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null 2>&1; }
fi
if ! command -v dockerd >/dev/null; then echo "docker engine: none (docker.io could not be installed): docker-backend tests will be skipped"; exit 1; fi
log=${TMPDIR:-/tmp}/lockcheck-dockerd.log
nohup dockerd --storage-driver=vfs --iptables=false --bridge=none >"$log" 2>&1 &
i=0
while [ $i -lt 60 ]; do
  if docker info >/dev/null 2>&1; then echo "docker engine: started (dockerd --storage-driver=vfs --iptables=false --bridge=none, log $log)"; exit 0; fi
  i=$((i+1)); sleep 0.5
done
echo "docker engine: dockerd did not come up (see $log): docker-backend tests will be skipped"
exit 1
