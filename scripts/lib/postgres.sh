#!/usr/bin/env bash
# A private PostgreSQL server for the team-store tests and benchmarks: its
# own data folder and port, never a system service.
#
#   postgres.sh start DIR   initialise DIR (if new) and start the server;
#                           prints the lines to `eval`:
#                             DYNO_TEST_PG_URL  postgres://dyno:PASSWORD@127.0.0.1:PORT/dyno
#                             DYNO_TEST_PG_DIR  DIR
#   postgres.sh stop DIR    stop it (fast shutdown)
#
# The server accepts TCP only over TLS (a self-signed certificate; pg_hba
# has `hostssl` lines only) and only with a password (scram-sha-256), so the
# tests exercise both. The user `dyno` may create databases, one per test.
# Debian's `postgresql` package provides the binaries (scripts/setup.sh);
# initdb refuses to run as root, so as root the server runs as `postgres`.
set -euo pipefail
cmd=${1:?usage: postgres.sh start|stop DIR}
dir=${2:?usage: postgres.sh start|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -x "$bin/pg_ctl" ] || { echo "postgres.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
data="$dir/data"

case "$cmd" in
stop)
  [ -f "$data/postmaster.pid" ] && "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  exit 0
  ;;
start) ;;
*) echo "postgres.sh: unknown command $cmd" >&2; exit 2 ;;
esac

mkdir -p "$dir"
if [ ! -f "$data/PG_VERSION" ]; then
  password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf '%s\n' "$password" >"$dir/password"
  printf '%s\n' "$port" >"$dir/port"
  mkdir -p "$data"
  [ ${#as_pg[@]} -gt 0 ] && chown -R postgres: "$dir"
  "${as_pg[@]}" "$bin/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=reject \
    --encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1
  openssl req -new -x509 -days 30 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$data/server.key" -out "$data/server.crt" >/dev/null 2>&1
  chmod 600 "$data/server.key"
  [ ${#as_pg[@]} -gt 0 ] && chown postgres: "$data/server.key" "$data/server.crt"
  cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
max_connections = 100
password_encryption = 'scram-sha-256'
EOF
  cat >"$data/pg_hba.conf" <<EOF
local   all  all                 trust
hostssl all  all  127.0.0.1/32   scram-sha-256
EOF
fi
port=$(cat "$dir/port")
password=$(cat "$dir/password")
if ! "${as_pg[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null
fi
psql=("$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt)
if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'dyno'")" != 1 ]; then
  "${psql[@]}" -c "CREATE ROLE dyno LOGIN CREATEDB PASSWORD '$password'"
  "${psql[@]}" -c "CREATE DATABASE dyno OWNER dyno"
fi
echo "export DYNO_TEST_PG_URL=postgres://dyno:$password@127.0.0.1:$port/dyno"
echo "export DYNO_TEST_PG_DIR=$dir"
