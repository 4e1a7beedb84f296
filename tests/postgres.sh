#!/usr/bin/env bash
# Run a command with TEST_POSTGRES_URL pointing at a throwaway PostgreSQL server on
# 127.0.0.1 (a fresh cluster in a temp dir, stopped and removed afterwards).
set -euo pipefail
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$pgbin" ] || [ ! -x "$pgbin/initdb" ]; then
  echo "PostgreSQL server binaries not found: apt-get install postgresql" >&2
  exit 1
fi
data=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_db=()
if [ "$(id -u)" = 0 ]; then  # PostgreSQL refuses to run as root
  chown postgres "$data"
  as_db=(runuser -u postgres --)
fi
"${as_db[@]}" "$pgbin/initdb" -D "$data" -A trust -U postgres >/dev/null
"${as_db[@]}" "$pgbin/pg_ctl" -D "$data" -o "-h 127.0.0.1 -p $port -k $data" \
  -l "$data/server.log" -w start >/dev/null
trap '"${as_db[@]}" "$pgbin/pg_ctl" -D "$data" -m immediate stop >/dev/null; rm -rf "$data"' EXIT
TEST_POSTGRES_URL="postgresql+psycopg://postgres@127.0.0.1:$port/postgres" "$@"
