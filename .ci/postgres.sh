#!/usr/bin/env bash
# Throwaway PostgreSQL for tests and benchmarks: fresh cluster, trust auth, loopback only.
# Usage: .ci/postgres.sh start|stop|status
#   start prints the SQLAlchemy URL, e.g. postgresql+psycopg://postgres@127.0.0.1:25432/irlens_test
# Env: PG_PORT (first port to try, 25432), PG_DIR (/tmp/irlens-pg), PG_DB (irlens_test)
set -euo pipefail
# Below Linux's ephemeral range (32768-60999): a port in it can be held by any client socket or
# by a test server that asked for a free port, and CI once failed on exactly that.
PG_PORT=${PG_PORT:-25432}
PG_DIR=${PG_DIR:-/tmp/irlens-pg}
PG_DB=${PG_DB:-irlens_test}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)  # Debian keeps initdb/pg_ctl off PATH

# The server refuses to run as root, so drop to the postgres user when we are root.
# cd /: the clone may sit in a directory the postgres user cannot enter (e.g. /root).
as_pg() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

case "${1:-}" in
  start)
    if [ -f "$PG_DIR/data/postmaster.pid" ]; then "$0" stop; fi
    rm -rf "$PG_DIR"; mkdir -p "$PG_DIR"
    [ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR"
    as_pg "$BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --no-locale >"$PG_DIR/initdb.log"
    # fsync off: the data is disposable and tests run much faster.
    # A port already in use moves us to the next one (up to 20 tries); any other failure stops.
    for try in $(seq 0 19); do
      port=$((PG_PORT + try))
      if as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start \
          -o "-h 127.0.0.1 -p $port -k $PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
          >/dev/null; then
        break
      fi
      if ! grep -q "Address already in use" "$PG_DIR/server.log" || [ "$try" = 19 ]; then
        cat "$PG_DIR/server.log" >&2; exit 1
      fi
      echo "postgres.sh: port $port is taken, trying $((port + 1))" >&2
      : >"$PG_DIR/server.log"
    done
    PG_PORT=$port
    echo "$PG_PORT" >"$PG_DIR/port"
    as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$PG_DB"
    echo "postgresql+psycopg://postgres@127.0.0.1:$PG_PORT/$PG_DB"
    ;;
  stop)
    # A postmaster.pid can outlive its server (a machine image taken after the server was killed):
    # pg_ctl then fails with "could not send stop signal", and there is nothing left to stop.
    if [ -f "$PG_DIR/data/postmaster.pid" ]; then
      as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 \
        || echo "postgres.sh: no server was running for $PG_DIR (stale postmaster.pid)" >&2
    fi
    rm -rf "$PG_DIR"
    ;;
  status)
    as_pg "$BIN/pg_isready" -h 127.0.0.1 -p "$(cat "$PG_DIR/port" 2>/dev/null || echo "$PG_PORT")"
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
