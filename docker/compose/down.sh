#!/bin/sh
# Stop and remove the compose deployment and its generated files.
set -eu
cd "$(dirname "$0")"
if command -v docker-compose >/dev/null; then docker-compose down -v; else docker compose down -v; fi
rm -rf run .env
