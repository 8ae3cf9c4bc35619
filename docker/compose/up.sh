#!/bin/sh
# Start the compose deployment with a fresh random password: writes .env (for compose), the Sentinels'
# config files (Sentinel rewrites its own), and run/lockcheck.yml (for --backend external).
set -eu
cd "$(dirname "$0")"
pass=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "REDIS_PASSWORD=$pass" > .env
for i in 1 2 3; do
  mkdir -p run/s$i
  cat > run/s$i/sentinel.conf <<CONF
port 1710$i
bind 127.0.0.1
requirepass $pass
dir /conf
sentinel monitor lockcheck 127.0.0.1 18001 2
sentinel auth-pass lockcheck $pass
sentinel down-after-milliseconds lockcheck 1000
sentinel failover-timeout lockcheck 5000
CONF
done
sed -e "s/^password_env: .*/password: $pass/" lockcheck.yml > run/lockcheck.yml
if command -v docker-compose >/dev/null; then docker-compose up -d; else docker compose up -d; fi
echo "up: lockcheck run --backend external --external $(pwd)/run/lockcheck.yml"
